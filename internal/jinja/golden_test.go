package jinja

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestAnsibleGolden renders each testdata/ansible/templates/*.j2 with
// vars.yml and compares it byte for byte with want/, what real Ansible
// (ansible-core 2.14's template module) rendered from the same files
// (testdata/ansible/gen.sh).
func TestAnsibleGolden(t *testing.T) {
	dir := filepath.Join("testdata", "ansible")
	raw, err := os.ReadFile(filepath.Join(dir, "vars.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := yaml.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	wants, err := filepath.Glob(filepath.Join(dir, "want", "*.out"))
	if err != nil || len(wants) == 0 {
		t.Fatalf("no golden outputs in %s/want (run gen.sh): %v", dir, err)
	}
	fsys := os.DirFS(dir)
	for _, w := range wants {
		name := strings.TrimSuffix(filepath.Base(w), ".out")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(w)
			if err != nil {
				t.Fatal(err)
			}
			o := Default()
			if name == "newline_crlf" {
				o.NewlineSequence = "\r\n"
			}
			got, err := Render(fsys, "templates/"+name+".j2", data, o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s (-ansible +ours):\n%s", name, diff)
			}
		})
	}
}
