package dsl

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestTooLargeMainYML: a main.yml over the size limit is reported as too
// large, once, not also as missing.
func TestTooLargeMainYML(t *testing.T) {
	big := "tasks:\n" + strings.Repeat("  - module: core.test.ping\n", maxFileSize/27+1)
	fsys := fstest.MapFS{
		"service.yml":              {Data: []byte("name: big\n")},
		"scenario/create/main.yml": {Data: []byte(big)},
		"destiny/d/main.yml":       {Data: []byte(big)},
	}
	_, ps := LoadFS(fsys)
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{
		"destiny/d/main.yml: file is larger than",
		"scenario/create/main.yml: file is larger than",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
}
