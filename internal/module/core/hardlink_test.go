package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Lstat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Lstat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

// TestFileHardLink follows Ansible's state=hard cases: create, already
// linked is unchanged, a symlink there is replaced, another file only
// with force, a directory never.
func TestFileHardLink(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeTreeFile(t, src, "data\n")
	link := filepath.Join(dir, "hard")
	params := map[string]any{"path": link, "target": src, "hard": true}

	res := run(t, "core.file.link", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatal("check mode made the link")
	}
	if !strings.Contains(res.Diff, "--- /dev/null") || !strings.Contains(res.Diff, "(hard link)") {
		t.Errorf("diff = %q", res.Diff)
	}
	wantChanged(t, run(t, "core.file.link", params, nil), true)
	if !sameFile(t, link, src) {
		t.Fatal("not a hard link to src")
	}
	before := snap(t, link)
	wantChanged(t, run(t, "core.file.link", params, nil), false)
	wantChanged(t, run(t, "core.file.link", params, &module.Env{Check: true}), false)
	before.untouched(t, link)

	// A relative target is relative to the link's directory.
	rel := filepath.Join(dir, "rel")
	wantChanged(t, run(t, "core.file.link", map[string]any{"path": rel, "target": "src", "hard": true}, nil), true)
	if !sameFile(t, rel, src) {
		t.Fatal("relative target not linked")
	}

	// A symlink at path is replaced without force.
	sym := filepath.Join(dir, "sym")
	if err := os.Symlink("src", sym); err != nil {
		t.Fatal(err)
	}
	res = run(t, "core.file.link", map[string]any{"path": sym, "target": src, "hard": true}, nil)
	wantChanged(t, res, true)
	if fi, _ := os.Lstat(sym); fi.Mode()&os.ModeSymlink != 0 || !sameFile(t, sym, src) || res.Data["previous"] != "src" {
		t.Fatalf("symlink not replaced by a hard link: %+v", res)
	}

	// Another file needs force; then it is replaced, not written.
	other := filepath.Join(dir, "other")
	writeTreeFile(t, other, "other\n")
	op := map[string]any{"path": other, "target": src, "hard": true}
	_, err := runErr(t, "core.file.link", op, nil)
	wantErrContains(t, err, "force: true", "(file 0644)")
	if readFile(t, other) != "other\n" {
		t.Fatal("file replaced without force")
	}
	op["force"] = true
	res = run(t, "core.file.link", op, &module.Env{Check: true})
	wantChanged(t, res, true)
	if readFile(t, other) != "other\n" {
		t.Fatal("check mode replaced the file")
	}
	wantChanged(t, run(t, "core.file.link", op, nil), true)
	if !sameFile(t, other, src) || readFile(t, src) != "data\n" {
		t.Fatal("force did not replace the file with the link")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 5 {
		t.Errorf("%d entries in the directory: a temporary link was left behind", len(entries))
	}
}

func TestFileHardLinkErrors(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeTreeFile(t, src, "data\n")
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"missing target", map[string]any{"path": filepath.Join(dir, "l"), "target": filepath.Join(dir, "none")}, []string{"does not exist"}},
		{"directory target", map[string]any{"path": filepath.Join(dir, "l"), "target": sub}, []string{"only regular files"}},
		{"directory at path", map[string]any{"path": sub, "target": src, "force": true}, []string{"is a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.params["hard"] = true
			_, err := runErr(t, "core.file.link", tc.params, nil)
			wantErrContains(t, err, tc.want...)
		})
	}
}

// TestFileHardLinkCrossDevice: /dev/shm (tmpfs) and the test's temporary
// directory are usually different filesystems; the link is refused with
// a clear error before anything is made, in check mode too.
func TestFileHardLinkCrossDevice(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "hardlink")
	if err != nil {
		t.Skipf("no /dev/shm to make a second filesystem: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	dir := t.TempDir()
	var a, b os.FileInfo
	if a, err = os.Stat(shm); err == nil {
		b, err = os.Stat(dir)
	}
	if err != nil || devOf(a) == devOf(b) {
		t.Skipf("/dev/shm and %s are one filesystem here", dir)
	}
	src := filepath.Join(shm, "src")
	writeTreeFile(t, src, "x")
	link := filepath.Join(dir, "l")
	for _, check := range []bool{true, false} {
		_, err := runErr(t, "core.file.link", map[string]any{"path": link, "target": src, "hard": true}, &module.Env{Check: check})
		if !errors.Is(err, safefs.ErrCrossDevice) || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("check %v: err %v, want the cross-device error", check, err)
		}
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatal("something was made at the link's path")
	}
}

// TestH1HardLinkToPlantedSymlink: nobody plants a symlink to root's file
// in its directory; a hard link with that symlink as target is refused
// (the symlink is not followed out of nobody's directory).
func TestH1HardLinkToPlantedSymlink(t *testing.T) {
	l := newH1Lab(t)
	asNobody(t, "ln -s "+l.sudoers+" "+filepath.Join(l.appdir, "src"))
	link := filepath.Join(l.appdir, "copy")
	_, err := runErr(t, "core.file.link", map[string]any{"path": link, "target": filepath.Join(l.appdir, "src"), "hard": true}, nil)
	if !errors.Is(err, safefs.ErrUnsafe) {
		t.Fatalf("err %v, want unsafe", err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatal("a link to root's file was made in nobody's directory")
	}
}

func devOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
