package testutil

import (
	"os"
	"strings"
	"testing"
)

// CheckSection checks that the file at path holds body between the lines
// begin and end (a generated part of a hand-written document). When it
// does not, update rewrites that part; otherwise the test fails saying to
// run rerun.
func CheckSection(t testing.TB, path, begin, end, body string, update bool, rerun string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated section's markers", path)
	}
	fresh := doc[:i] + begin + body + doc[j:]
	if fresh == doc {
		return
	}
	if update {
		if err := os.WriteFile(path, []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: run %s", path, rerun)
}
