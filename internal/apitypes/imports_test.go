package apitypes_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary: the wire types import neither the
// store nor the engine (nor anything else of ours), so a store schema
// change cannot silently change the API.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.GoFiles) == 0 {
		t.Fatal("no Go files found")
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("apitypes imports %s; wire types may import only the standard library", imp)
		}
	}
}
