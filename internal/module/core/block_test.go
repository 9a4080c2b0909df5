package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileBlock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "haproxy.cfg")
	writeTestFile(t, p, "global\n  daemon\nfrontend web\n  bind :80\n")
	begin, end := "# BEGIN SOUL STACK MANAGED BLOCK", "# END SOUL STACK MANAGED BLOCK"

	applyTwice(t, "core.file.block", p, map[string]any{"path": p, "block": "backend app\n  server a 10.0.0.1:80\n"},
		"global\n  daemon\nfrontend web\n  bind :80\n"+begin+"\nbackend app\n  server a 10.0.0.1:80\n"+end+"\n")
	// A changed block replaces the lines between the markers, in place.
	res := run(t, "core.file.block", map[string]any{"path": p, "block": "backend app\n  server b 10.0.0.2:80"}, nil)
	wantChanged(t, res, true)
	if res.Data["found"] != true || !strings.Contains(res.Diff, "-  server a") || !strings.Contains(res.Diff, "+  server b") {
		t.Errorf("data %v diff %q", res.Data, res.Diff)
	}
	// A second block with its own markers, inserted after a regexp.
	applyTwice(t, "core.file.block", p, map[string]any{"path": p, "block": "  maxconn 100", "marker": "# {mark} tuning", "insert_after": "^global"},
		"global\n# BEGIN tuning\n  maxconn 100\n# END tuning\n  daemon\nfrontend web\n  bind :80\n"+begin+"\nbackend app\n  server b 10.0.0.2:80\n"+end+"\n")
	// BOF with custom begin/end words.
	applyTwice(t, "core.file.block", p, map[string]any{"path": p, "block": "# header", "marker": "## {mark}", "marker_begin": "start", "marker_end": "stop", "insert_before": "BOF"},
		"## start\n# header\n## stop\nglobal\n# BEGIN tuning\n  maxconn 100\n# END tuning\n  daemon\nfrontend web\n  bind :80\n"+begin+"\nbackend app\n  server b 10.0.0.2:80\n"+end+"\n")
	// state: absent and an empty block remove a block with its markers.
	applyTwice(t, "core.file.block", p, map[string]any{"path": p, "marker": "## {mark}", "marker_begin": "start", "marker_end": "stop", "state": "absent"},
		"global\n# BEGIN tuning\n  maxconn 100\n# END tuning\n  daemon\nfrontend web\n  bind :80\n"+begin+"\nbackend app\n  server b 10.0.0.2:80\n"+end+"\n")
	applyTwice(t, "core.file.block", p, map[string]any{"path": p, "block": ""},
		"global\n# BEGIN tuning\n  maxconn 100\n# END tuning\n  daemon\nfrontend web\n  bind :80\n")

	missing := filepath.Join(dir, "new.conf")
	_, err := runErr(t, "core.file.block", map[string]any{"path": missing, "block": "x"}, nil)
	wantErrContains(t, err, "does not exist", "create: true")
	wantChanged(t, run(t, "core.file.block", map[string]any{"path": missing, "state": "absent"}, nil), false)
	applyTwice(t, "core.file.block", missing, map[string]any{"path": missing, "block": "x", "create": true}, begin+"\nx\n"+end+"\n")
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"marker without mark", map[string]any{"path": p, "block": "x", "marker": "# managed"}, "{mark}"},
		{"same markers", map[string]any{"path": p, "block": "x", "marker_begin": "X", "marker_end": "X"}, "must differ"},
		{"bad insert regexp", map[string]any{"path": p, "block": "x", "insert_after": "("}, `param "insert_after"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.block", tc.params, nil)
			wantErrContains(t, err, tc.want)
		})
	}
}

func TestFileReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "redis.conf")
	writeTestFile(t, p, "bind 127.0.0.1\nport 6379\n# bind 127.0.0.1 ::1\nprotected-mode yes\n")
	applyTwice(t, "core.file.replace", p, map[string]any{"path": p, "regexp": `^bind 127\.0\.0\.1$`, "replace": "bind 0.0.0.0"},
		"bind 0.0.0.0\nport 6379\n# bind 127.0.0.1 ::1\nprotected-mode yes\n")
	// Groups expand; every match is replaced.
	res := run(t, "core.file.replace", map[string]any{"path": p, "regexp": `(\d+)\.(\d+)\.(\d+)\.(\d+)`, "replace": "${1}-${2}"}, nil)
	wantChanged(t, res, true)
	if res.Data["replacements"] != int64(2) || readFile(t, p) != "bind 0-0\nport 6379\n# bind 127-0 ::1\nprotected-mode yes\n" {
		t.Fatalf("data %v content %q", res.Data, readFile(t, p))
	}
	before := snap(t, p)
	res = run(t, "core.file.replace", map[string]any{"path": p, "regexp": "nomatch"}, nil)
	wantChanged(t, res, false)
	before.untouched(t, p)
	_, err := runErr(t, "core.file.replace", map[string]any{"path": filepath.Join(dir, "none"), "regexp": "x"}, nil)
	wantErrContains(t, err, "does not exist")
	_, err = runErr(t, "core.file.replace", map[string]any{"path": p, "regexp": "[", "replace": "x"}, nil)
	wantErrContains(t, err, `param "regexp"`)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
}
