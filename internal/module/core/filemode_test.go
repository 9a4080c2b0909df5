package core

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// TestSymbolicMode: chmod's symbolic modes as Ansible applies them
// (values checked against ansible-core 2.14's file module, except
// "u=rw-x+X": current Ansible (module_utils/basic.py, prev_mode) decides X
// on the mode built so far, 0600 here, where 2.14 looked at the file's
// mode before the change and gave 0700).
func TestSymbolicMode(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		cur   fs.FileMode
		isDir bool
		want  string
	}{
		{"u=rwX,g=rX,o=", 0o644, false, "0640"},
		{"u=rwX,g=rX,o=", 0o755, false, "0750"},
		{"u=rwX,g=rX,o=", 0o600, true, "0750"},
		{"a+x", 0o644, false, "0755"},
		{"go-w", 0o666, false, "0644"},
		{"u+s,g+s", 0o755, true, "6755"},
		{"o+t", 0o777, true, "1777"},
		{"u=rw-x+X", 0o700, false, "0600"},
		{"g=u", 0o640, false, "0660"},
		{"o=", 0o777, false, "0770"},
		{"=r", 0o000, false, "0444"},  // umask 022 does not mask r
		{"=rw", 0o000, false, "0644"}, // ... but masks w for group and others
	} {
		t.Run(tc.mode, func(t *testing.T) {
			m, err := parseSymbolicMode(tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := formatMode(m.apply(tc.cur, tc.isDir, 0o022)); got != tc.want {
				t.Fatalf("%s on %s (dir %v) = %s, want %s", tc.mode, formatMode(tc.cur), tc.isDir, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"z=r", "u=q", "u", "u=r,,"} {
		if _, err := parseSymbolicMode(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestFileDirectoryRecurseSymbolicMode: the usual u=rwX,g=rX,o= over a
// tree gives directories and executables 0750 and other files 0640.
func TestFileDirectoryRecurseSymbolicMode(t *testing.T) {
	top := filepath.Join(t.TempDir(), "tree")
	writeTreeFile(t, filepath.Join(top, "sub/data"), "d")
	writeTreeFile(t, filepath.Join(top, "run.sh"), "#!/bin/sh\n")
	for p, m := range map[string]os.FileMode{"sub/data": 0o666, "run.sh": 0o755, "sub": 0o777, "": 0o700} {
		if err := os.Chmod(filepath.Join(top, p), m); err != nil {
			t.Fatal(err)
		}
	}
	params := map[string]any{"path": top, "mode": "u=rwX,g=rX,o=", "recurse": true}
	wantChanged(t, run(t, "core.file.directory", params, &module.Env{Check: true}), true)
	if permOf(t, filepath.Join(top, "sub/data")) != 0o666 {
		t.Fatal("check mode changed a mode")
	}
	wantChanged(t, run(t, "core.file.directory", params, nil), true)
	for p, want := range map[string]os.FileMode{"": 0o750, "sub": 0o750, "sub/data": 0o640, "run.sh": 0o750} {
		if got := permOf(t, filepath.Join(top, p)); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	wantChanged(t, run(t, "core.file.directory", params, nil), false)

	// On a single file, through core.file.present.
	f := filepath.Join(top, "sub/data")
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": f, "mode": "g+w"}, nil), true)
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": f, "mode": "g+w"}, nil), false)
	if permOf(t, f) != 0o660 {
		t.Fatalf("g+w: %v", permOf(t, f))
	}
	_, err := runErr(t, "core.file.present", map[string]any{"path": f, "mode": "u=q"}, nil)
	wantErrContains(t, err, "symbolic")
}
