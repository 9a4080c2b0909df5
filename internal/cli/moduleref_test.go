package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// TestModuleReferenceCurrent: docs/modules.md is what the modules' schemas
// generate today; a module, param, default, result field or example that
// changed without `go generate ./internal/cli` fails here.
func TestModuleReferenceCurrent(t *testing.T) {
	var want bytes.Buffer
	if err := WriteModuleReference(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", ModuleReferencePath))
	if err != nil {
		t.Fatalf("%v (run: go generate ./internal/cli)", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s is stale (run: go generate ./internal/cli); first difference at line %d:\n have %q\n want %q", ModuleReferencePath, i+1, g, w)
			}
		}
	}
	// Every module has its section and its example.
	for _, n := range module.Names() {
		if !strings.Contains(want.String(), "\n### "+n+"\n") {
			t.Errorf("no section for %s", n)
		}
	}
}

// TestModuleTableCurrent: the tour's module table (between its markers,
// in docs/tour.md) is what the modules' schemas generate today.
func TestModuleTableCurrent(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", ModuleTablePath))
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteModuleTable(&table); err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceModuleTable(readme, table.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readme, want) {
		t.Fatalf("the module table of %s is stale: run go generate ./internal/cli", ModuleTablePath)
	}
	for _, n := range module.Names() {
		if !strings.Contains(table.String(), "[`"+n+"`]") {
			t.Errorf("no row for %s", n)
		}
	}
	if _, err := ReplaceModuleTable([]byte("no markers\n"), table.Bytes()); err == nil {
		t.Error("a page without the markers was accepted")
	}
}
