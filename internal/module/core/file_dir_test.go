package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// writeTreeFile writes p (mode 0644), creating its parent directories.
func writeTreeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func permOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestFileDirectoryRecurse: recurse gives the mode to the whole tree (files
// too, as Ansible does with an octal mode), converges on the second run,
// never follows a symlink inside, and check mode changes nothing.
func TestFileDirectoryRecurse(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	writeTreeFile(t, filepath.Join(outside, "keep"), "keep\n")
	if err := os.Chmod(filepath.Join(outside, "keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(base, "tree")
	writeTreeFile(t, filepath.Join(top, "a/b/file"), "x\n")
	writeTreeFile(t, filepath.Join(top, "top.txt"), "y\n")
	if err := os.Symlink(outside, filepath.Join(top, "a/escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(top, "keep-link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, filepath.Join(top, "a"), filepath.Join(top, "a/b")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	params := map[string]any{"path": top, "mode": "0750", "recurse": true}

	res := run(t, "core.file.directory", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	for _, want := range []string{"mode 0755 -> 0750", filepath.Join(top, "a/b/file") + ": mode 0644 -> 0750"} {
		if !strings.Contains(res.Diff, want) {
			t.Errorf("check diff %q lacks %q", res.Diff, want)
		}
	}
	if strings.Contains(res.Diff, "escape") || strings.Contains(res.Diff, "keep-link") {
		t.Errorf("a symlink's mode is listed as a change: %q", res.Diff)
	}
	if permOf(t, filepath.Join(top, "a/b/file")) != 0o644 || permOf(t, top) != 0o755 {
		t.Fatal("check mode changed modes")
	}

	wantChanged(t, run(t, "core.file.directory", params, nil), true)
	for _, p := range []string{top, "a", "a/b", "a/b/file", "top.txt"} {
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		if got := permOf(t, p); got != 0o750 {
			t.Errorf("%s mode %v, want 0750", p, got)
		}
	}
	if permOf(t, outside) == 0o750 || permOf(t, filepath.Join(outside, "keep")) != 0o600 {
		t.Fatal("recursion followed a symlink out of the tree")
	}

	before := snap(t, filepath.Join(top, "a/b/file"))
	wantChanged(t, run(t, "core.file.directory", params, nil), false)
	wantChanged(t, run(t, "core.file.directory", params, &module.Env{Check: true}), false)
	before.untouched(t, filepath.Join(top, "a/b/file"))

	// Only one entry drifted: changed, and only it is listed.
	if err := os.Chmod(filepath.Join(top, "a/b/file"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = run(t, "core.file.directory", params, nil)
	wantChanged(t, res, true)
	if got := strings.Count(res.Diff, "\n"); got != 1 || permOf(t, filepath.Join(top, "a/b/file")) != 0o750 {
		t.Fatalf("diff %q (%d lines), mode %v", res.Diff, got, permOf(t, filepath.Join(top, "a/b/file")))
	}

	// Without recurse only the top changes.
	wantChanged(t, run(t, "core.file.directory", map[string]any{"path": top, "mode": "0700"}, nil), true)
	if permOf(t, top) != 0o700 || permOf(t, filepath.Join(top, "a")) != 0o750 {
		t.Fatal("recurse: false changed the tree")
	}
	// recurse without mode or owner changes nothing inside.
	wantChanged(t, run(t, "core.file.directory", map[string]any{"path": top, "recurse": true}, nil), false)
}

// TestFileDirectoryRecurseOwner: owner and group over a tree as root;
// symlinks get their own owner (lchown), their targets are untouched.
func TestFileDirectoryRecurseOwner(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	target := filepath.Join(base, "target")
	writeTreeFile(t, target, "t\n")
	top := filepath.Join(base, "tree")
	writeTreeFile(t, filepath.Join(top, "sub/f"), "x\n")
	if err := os.Symlink(target, filepath.Join(top, "sub/link")); err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"path": top, "owner": nobodyID, "group": nobodyID, "recurse": true}
	wantChanged(t, run(t, "core.file.directory", params, nil), true)
	for _, p := range []string{top, filepath.Join(top, "sub"), filepath.Join(top, "sub/f"), filepath.Join(top, "sub/link")} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid, gid := ownerOf(fi); uid != nobodyID || gid != nobodyID {
			t.Errorf("%s owned by %d:%d", p, uid, gid)
		}
	}
	rootOwned(t, target, 0o644, "t\n")
	wantChanged(t, run(t, "core.file.directory", params, nil), false)
}

// TestH1FileDirectoryRecursePlantedHardLink: nobody plants, inside its
// own directory, a hard link to root's file; a recursive chown/chmod of
// that directory (to nobody) must not hand root's file to nobody.
func TestH1FileDirectoryRecursePlantedHardLink(t *testing.T) {
	l := newH1Lab(t)
	if err := os.Chmod(l.sudoers, 0o444); err != nil { // nobody may link a file it can read
		t.Fatal(err)
	}
	// protected_hardlinks forbids nobody to link root's file, so root
	// plants it, as a user on a host without that protection would.
	if err := os.Link(l.sudoers, filepath.Join(l.appdir, "planted")); err != nil {
		t.Fatal(err)
	}
	asNobody(t, "echo mine > "+filepath.Join(l.appdir, "mine"))
	params := map[string]any{"path": l.appdir, "owner": nobodyID, "mode": "0777", "recurse": true}
	for _, check := range []bool{true, false} {
		_, err := runErr(t, "core.file.directory", params, &module.Env{Check: check})
		if !errors.Is(err, safefs.ErrUnsafe) || !strings.Contains(err.Error(), "planted") {
			t.Fatalf("check %v: err %v, want an unsafe hard link refused", check, err)
		}
	}
	rootOwned(t, l.sudoers, 0o444, "ORIGINAL ROOT-OWNED CONTENT\n")
}

// TestModeShownAsOctal: the d--------- bug — a directory where a file is
// wanted is described with its type and octal mode, as Ansible shows it.
func TestModeShownAsOctal(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "f")
	writeTreeFile(t, f, "x")
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		module string
		params map[string]any
		want   string
	}{
		{"core.file.present", map[string]any{"path": d, "content": "x"}, "(directory 0755)"},
		{"core.file.directory", map[string]any{"path": f}, "(file 0640)"},
		{"core.file.link", map[string]any{"path": f, "target": d}, "(file 0640)"},
	} {
		t.Run(tc.module, func(t *testing.T) {
			_, err := runErr(t, tc.module, tc.params, nil)
			wantErrContains(t, err, tc.want)
			if strings.Contains(err.Error(), "---") {
				t.Fatalf("error still shows an ls-style mode: %v", err)
			}
		})
	}
}
