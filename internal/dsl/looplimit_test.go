package dsl

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestLiteralLoopOverTheLimit (SPEC §17, issue 35): a literal loop: list
// longer than DefaultMaxLoopItems is refused at validation with its
// position; one at the limit is fine.
func TestLiteralLoopOverTheLimit(t *testing.T) {
	repo := func(n int) fstest.MapFS {
		items := strings.TrimSuffix(strings.Repeat("1,", n), ",")
		return fstest.MapFS{
			"service.yml":         {Data: []byte("name: l\n")},
			"scenario/s/main.yml": {Data: []byte("tasks:\n  - name: big\n    module: core.test.echo\n    loop: [" + items + "]\n    params: {message: \"${ item }\"}\n")},
		}
	}
	if _, ps := LoadFS(repo(DefaultMaxLoopItems)); len(ps) > 0 {
		t.Fatalf("a loop at the limit: %v", ps)
	}
	_, ps := LoadFS(repo(DefaultMaxLoopItems + 1))
	want := "scenario/s/main.yml:4:11: loop: 10001 items, more than the limit of 10000 per task (runs.max_loop_items)"
	if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), want) {
		t.Fatalf("problems:\n%v\nwant one starting with %q", ps, want)
	}
}
