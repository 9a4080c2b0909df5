package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ChangeTree visits every entry once, in name order, never through a
// symlink, and changes only directories' and files' modes.
func TestChangeTree(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "outside/f"), "o")
	mustWrite(t, filepath.Join(dir, "top/b/f"), "f")
	mustWrite(t, filepath.Join(dir, "top/a"), "a")
	if err := os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "top/link")); err != nil {
		t.Fatal(err)
	}
	tgt, err := FS{}.Open(filepath.Join(dir, "top"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	var seen []string
	mode := os.FileMode(0o700)
	visit := func(rel string, info Info) Attrs {
		seen = append(seen, rel)
		return Attrs{UID: -1, GID: -1, Mode: &mode}
	}
	if err := tgt.ChangeTree(visit, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"", "a", "b", "b/f", "link"}
	if len(seen) != len(want) {
		t.Fatalf("visited %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("visited %v, want %v", seen, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "top/a")); fi.Mode().Perm() != 0o644 {
		t.Fatal("dry walk changed a mode")
	}
	if err := tgt.ChangeTree(visit, false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"top", "top/a", "top/b", "top/b/f"} {
		if fi, _ := os.Stat(filepath.Join(dir, p)); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v", p, fi.Mode())
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "outside/f")); fi.Mode().Perm() != 0o644 {
		t.Fatal("the walk went through the symlink")
	}
}

// Hardlink over a name that already is the same file leaves no
// temporary name behind; SetTimes sets exactly the times asked.
func TestHardlinkAndTimes(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "src"), "s")
	src, err := FS{}.Open(filepath.Join(dir, "src"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := FS{}.Open(filepath.Join(dir, "dst"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for range 2 {
		if err := dst.Hardlink(src); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d entries, want src and dst", len(entries))
	}
	at := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := dst.SetTimes(nil, &at); err != nil {
		t.Fatal(err)
	}
	fi, _, err := src.Lstat()
	if err != nil || !fi.ModTime.Equal(at) || fi.ATime.Equal(at) {
		t.Fatalf("times %v %v (%v), want mtime %v and atime untouched", fi.ModTime, fi.ATime, err, at)
	}
	// A symlink as source is refused (linkat never follows it).
	if err := os.Symlink("src", filepath.Join(dir, "sym")); err != nil {
		t.Fatal(err)
	}
	sym, err := FS{}.Open(filepath.Join(dir, "sym"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sym.Close()
	if err := dst.Hardlink(sym); err == nil || errors.Is(err, ErrCrossDevice) {
		t.Fatalf("hard link to a symlink: %v", err)
	}
}
