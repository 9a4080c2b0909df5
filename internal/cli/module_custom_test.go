package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// TestModuleListService: --service adds the repository's custom modules
// (service.<name>) after the core ones, flagged custom, and module show
// documents one from its module.yml.
func TestModuleListService(t *testing.T) {
	code, out, errOut := soulctl(t, "-o", "json", "module", "list", "--service", "../../examples/custom-modules")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []struct {
		Name    string   `json:"name"`
		Summary string   `json:"summary"`
		Flags   []string `json:"flags"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(module.Names())+2 {
		t.Fatalf("%d rows, want the %d core modules and 2 custom ones", len(rows), len(module.Names()))
	}
	last := rows[len(rows)-2:]
	if last[0].Name != "service.ini_value" || last[1].Name != "service.motd" ||
		!strings.Contains(strings.Join(last[1].Flags, ","), "custom") || !strings.HasPrefix(last[1].Summary, "Write /etc/motd") {
		t.Fatalf("custom rows = %+v", last)
	}

	code, out, errOut = soulctl(t, "module", "show", "service.motd", "--service", "../../examples/custom-modules")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Check mode:    runs with check: true", "timeout 10s, at most 65536 bytes", "banner", "environment  string  no        \"production\"", "lines  integer", "module: service.motd"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut = soulctl(t, "module", "show", "service.motd"); code != 2 || !strings.Contains(errOut, "give --service <repo>") {
		t.Errorf("show without --service: exit %d: %s", code, errOut)
	}
}

// TestModuleListServiceBroken: a repository whose custom module is broken
// is an error naming the file and line.
func TestModuleListServiceBroken(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "modules", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules", "x", "module.yml"), []byte("summary: s\nparams:\n  a: {type: str}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules", "x", "run"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := soulctl(t, "module", "list", "--service", dir)
	if code != 2 || !strings.Contains(errOut, `modules/x/module.yml:3:13: param a: unknown type "str"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
