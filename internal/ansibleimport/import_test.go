package ansibleimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dsl"
	_ "github.com/soulstack/soulstack/internal/module/core" // the module schemas the import maps onto
)

// writeImport writes im under a temp dir and returns it.
func writeImport(t *testing.T, im *Import) string {
	t.Helper()
	dir := t.TempDir()
	for p, b := range im.Files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestImportRedisRole(t *testing.T) {
	r, err := LoadRole("testdata/roles/redis")
	if err != nil {
		t.Fatal(err)
	}
	im, err := ImportRole(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := writeImport(t, im)
	t.Logf("destiny:\n%s", im.Files["destiny/redis/main.yml"])
	t.Logf("report:\n%s", im.Files["IMPORT.md"])
	svc, problems := dsl.Load(dir)
	manual := im.Counts()[Manual]
	if manual == 0 && len(problems) > 0 {
		t.Errorf("no task is manual, yet the import does not validate:\n%v", problems)
	}
	if manual > 0 && len(problems) == 0 {
		t.Errorf("%d tasks are manual, yet the import validates: a manual task must stop validation", manual)
	}
	_ = svc
	for _, row := range im.Rows {
		if row.Output == "" || strings.HasSuffix(row.Output, ":0") {
			t.Errorf("%s (%s) has no output line: %q", row.Upstream, row.Name, row.Output)
		}
	}
}
