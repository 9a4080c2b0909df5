package devmode_test

import (
	"debug/buildinfo"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneYAMLLibrary reads the module list compiled into each shipped binary
// and fails when a YAML library other than go.yaml.in/yaml/v3 (the
// maintained successor of the archived gopkg.in/yaml.v3) is linked in: one
// YAML library ships, with one set of position and strictness rules.
func TestOneYAMLLibrary(t *testing.T) {
	for _, name := range []string{"keeper", "soul", "soulctl"} {
		info, err := buildinfo.ReadFile(filepath.Join(binDir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var yamls []string
		for _, d := range info.Deps {
			if strings.Contains(strings.ToLower(d.Path), "yaml") {
				yamls = append(yamls, d.Path)
			}
		}
		if len(yamls) != 1 || yamls[0] != "go.yaml.in/yaml/v3" {
			t.Errorf("%s links YAML modules %v, want only go.yaml.in/yaml/v3", name, yamls)
		}
	}
}
