package safefs

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Confinement (--root): absolute symlinks restart at the root, `..` in a
// symlink never climbs above it, `..` in the path is refused.
func TestConfinedToRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(outside, "secret"), "outside\n")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, dest := range map[string]string{"abs": outside, "up": "../../../../../../..", "self": "self"} {
		if err := os.Symlink(dest, filepath.Join(root, "etc", name)); err != nil {
			t.Fatal(err)
		}
	}
	fsys := FS{Root: root}
	tgt, err := fsys.Open("/etc/abs/secret", Options{MakeDirs: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tgt.WriteFile([]byte("in\n"), 0o600, -1, -1); err != nil {
		t.Fatal(err)
	}
	tgt.Close()
	if read(t, filepath.Join(outside, "secret")) != "outside\n" || read(t, filepath.Join(root, outside, "secret")) != "in\n" {
		t.Fatal("an absolute symlink led the write out of the root")
	}
	tgt, err = fsys.Open("/etc/up/x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tgt.VPath() != "/x" || tgt.HostPath() != filepath.Join(root, "x") {
		t.Fatalf("../ in a symlink resolved to %s (%s), want /x inside the root", tgt.VPath(), tgt.HostPath())
	}
	tgt.Close()
	if _, err := fsys.Open("/etc/../x", Options{}); err == nil || !strings.Contains(err.Error(), "'..'") {
		t.Fatalf("'..' in a path under a root: err %v", err)
	}
	if _, err := fsys.Open("/etc/self/x", Options{}); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("symlink loop: err %v, want ELOOP", err)
	}
	if _, err := fsys.Open("/", Options{}); err == nil {
		t.Fatal("the root itself opened as a target")
	}
	if hp, err := fsys.HostPath("/"); err != nil || hp != root {
		t.Fatalf("HostPath(/) = %q, %v", hp, err)
	}
	if hp, err := fsys.HostPath("/etc/abs"); err != nil || hp != filepath.Join(root, outside) {
		t.Fatalf("HostPath = %q, %v", hp, err)
	}
}

// The last component is never followed unless asked; Remove removes a
// link, not its target, and never walks a symlink inside a directory.
func TestLastComponentAndRemove(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "keep/file"), "keep\n")
	if err := os.Symlink(filepath.Join(dir, "keep"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "tree/a/b"), "b\n")
	if err := os.Symlink(filepath.Join(dir, "keep"), filepath.Join(dir, "tree/a/inner")); err != nil {
		t.Fatal(err)
	}
	fsys := FS{}
	tgt, err := fsys.Open(filepath.Join(dir, "link"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, ok, err := tgt.Lstat()
	if err != nil || !ok || !fi.IsSymlink() {
		t.Fatalf("Lstat of a link: %v %v %v", fi, ok, err)
	}
	if _, err := tgt.ReadFile(0); !errors.Is(err, ErrSymlink) {
		t.Fatalf("ReadFile through a link: err %v, want ErrSymlink", err)
	}
	if err := tgt.Remove(); err != nil {
		t.Fatal(err)
	}
	tgt.Close()
	tgt, err = fsys.Open(filepath.Join(dir, "tree"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tgt.Remove(); err != nil {
		t.Fatal(err)
	}
	tgt.Close()
	if read(t, filepath.Join(dir, "keep/file")) != "keep\n" {
		t.Fatal("removal followed a symlink")
	}
	for _, p := range []string{"link", "tree"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Fatalf("%s not removed", p)
		}
	}
	if _, err := fsys.Open(filepath.Join(dir, "none/x"), Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing parent: %v", err)
	}
}

// WriteFile creates its temporary file 0600 in the target directory and
// leaves nothing behind; the final mode is exactly the one asked.
func TestWriteFileModes(t *testing.T) {
	dir := t.TempDir()
	tgt, err := FS{}.Open(filepath.Join(dir, "f"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if err := tgt.WriteFile([]byte("x"), 0o4755|fs.ModeSetuid, -1, -1); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "f"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&fs.ModeSetuid == 0 {
		t.Fatalf("mode = %v, want 4755 whatever the umask", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d entries left in the directory", len(entries))
	}
}

// H1 (security audit): the unsafe-path-transition rule on a tree whose
// middle directory belongs to nobody: nobody's absolute and relative links
// to root's files are refused, a link within nobody's own tree is fine.
func TestH1UnsafeTransitions(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root, and CI must run it")
		}
		t.Skip("needs root to chown to nobody")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(base, "root/secret"), "s\n")
	user := filepath.Join(base, "user")
	if err := os.MkdirAll(filepath.Join(user, "own"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(user, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(user, "own"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "ln -s "+filepath.Join(base, "root")+" abs && ln -s ../root rel && ln -s own mine && ln -s ../root/secret f")
	cmd.Dir = user
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := os.Mkdir(filepath.Join(user, "rootdir"), 0o755); err != nil { // root's dir inside nobody's
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		follow bool
		unsafe bool
	}{
		{"abs/secret", false, true},
		{"rel/secret", false, true},
		{"f", true, true},
		{"rootdir/x", false, true},
		{"mine/x", false, false},
		{"f", false, false}, // the link itself, not followed
	} {
		tgt, err := FS{}.Open(filepath.Join(user, tc.path), Options{Follow: tc.follow})
		if tc.unsafe != errors.Is(err, ErrUnsafe) {
			t.Errorf("%s (follow %v): err %v, want unsafe %v", tc.path, tc.follow, err, tc.unsafe)
		}
		if tgt != nil {
			tgt.Close()
		}
	}
}

// Confine pins the directory it resolved: swapped for a symlink (or
// another directory) afterwards, it is refused instead of followed.
func TestConfineRefusesASwappedRoot(t *testing.T) {
	base := t.TempDir()
	dest, other := filepath.Join(base, "dest"), filepath.Join(base, "other")
	for _, d := range []string{dest, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	into, err := FS{}.Confine(dest)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := into.Open("/f", Options{})
	if err != nil {
		t.Fatal(err)
	}
	tgt.Close()
	if err := os.Rename(dest, dest+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, dest); err != nil {
		t.Fatal(err)
	}
	if _, err := into.Open("/f", Options{}); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("open in a swapped root: err %v, want ErrUnsafe", err)
	}
	if _, err := (FS{}).Confine(filepath.Join(base, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Confine of a missing directory: %v", err)
	}
}
