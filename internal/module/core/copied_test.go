package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/soulstack/soulstack/internal/module"
)

func TestFileCopied(t *testing.T) {
	bin := []byte{0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff, '\n', 0}
	files := fstest.MapFS{"files/bin/tool": {Data: bin}, "files/motd": {Data: []byte("hi\n")}}
	env := &module.Env{Files: files}
	p := filepath.Join(t.TempDir(), "tool")
	params := map[string]any{"path": p, "src": "bin/tool", "mode": "0755",
		"sha256": "1aa53d1aa6e6a5e7ab2a0b5e9a4bb5e0e0e6e2fb0e7aa0b7b6ad4c4a1b4ac0f3"}
	// A wrong pin fails before anything is written.
	_, err := runErr(t, "core.file.copied", params, env)
	wantErrContains(t, err, "not the pinned", "nothing was written")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("written despite a checksum mismatch")
	}
	delete(params, "sha256")
	res := run(t, "core.file.copied", params, &module.Env{Files: files, Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "binary") {
		t.Errorf("diff of binary content = %q", res.Diff)
	}
	res = run(t, "core.file.copied", params, env)
	wantChanged(t, res, true)
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, bin) || res.Data["src"] != "bin/tool" {
		t.Fatalf("copied %v, data %v", got, res.Data)
	}
	params["sha256"] = res.Data["sha256"]
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.copied", params, env), false)
	before.untouched(t, p)
	for _, tc := range []struct {
		name   string
		params map[string]any
		env    *module.Env
		want   string
	}{
		{"missing src", map[string]any{"path": p, "src": "nope"}, env, "files/nope not found"},
		{"escape", map[string]any{"path": p, "src": "../main.yml"}, env, "without '..'"},
		{"absolute", map[string]any{"path": p, "src": "/etc/passwd"}, env, "relative"},
		{"no bundle", map[string]any{"path": p, "src": "motd"}, &module.Env{}, "no bundle files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.copied", tc.params, tc.env)
			wantErrContains(t, err, tc.want)
			before.untouched(t, p)
		})
	}
}
