package core

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

func mtimeOf(t *testing.T, p string) time.Time {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

func atimeOf(t *testing.T, p string) time.Time {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return time.Unix(st.Atim.Sec, st.Atim.Nsec)
}

// TestFileTouched follows Ansible's touch cases: a missing file is
// created empty; the default "now" changes on every run; preserve
// converges; check mode changes nothing and reports the same.
func TestFileTouched(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "touched")
	params := map[string]any{"path": p, "mode": "0640"}

	res := run(t, "core.file.touched", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatal("check mode created the file")
	}
	if !strings.Contains(res.Diff, "create "+p) {
		t.Errorf("check diff = %q", res.Diff)
	}
	res = run(t, "core.file.touched", params, nil)
	wantChanged(t, res, true)
	if fi, err := os.Stat(p); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o640 || res.Data["created"] != true {
		t.Fatalf("touch created %v (%v), data %v", fi, err, res.Data)
	}

	// "now" (the default) always changes, and moves the times.
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	res = run(t, "core.file.touched", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !mtimeOf(t, p).Equal(old) {
		t.Fatal("check mode moved the mtime")
	}
	wantChanged(t, run(t, "core.file.touched", params, nil), true)
	if time.Since(mtimeOf(t, p)) > time.Minute {
		t.Fatalf("mtime %v not moved to now", mtimeOf(t, p))
	}

	// preserve on both: converged and untouched; on a missing file it
	// still creates it.
	keep := map[string]any{"path": p, "modification_time": "preserve", "access_time": "preserve"}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.touched", keep, nil), false)
	wantChanged(t, run(t, "core.file.touched", keep, &module.Env{Check: true}), false)
	before.untouched(t, p)
	other := filepath.Join(dir, "other")
	wantChanged(t, run(t, "core.file.touched", map[string]any{"path": other, "modification_time": "preserve", "access_time": "preserve"}, nil), true)
	if _, err := os.Stat(other); err != nil {
		t.Fatal(err)
	}

	// An existing directory is touched too, its content left alone.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(sub, old, old); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, run(t, "core.file.touched", map[string]any{"path": sub}, nil), true)
	if fi, _ := os.Stat(sub); !fi.IsDir() || fi.ModTime().Equal(old) {
		t.Fatalf("directory not touched: %v", fi.ModTime())
	}
}

// TestFileTimes sets fixed times (Ansible's modification_time and
// access_time with their formats): first run changes, second converges.
func TestFileTimes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	want := time.Date(2021, 3, 4, 5, 6, 7, 0, time.Local)
	params := map[string]any{"path": p, "modification_time": "202103040506.07", "access_time": "2021-03-04 05:06:07",
		"access_time_format": "%Y-%m-%d %H:%M:%S"}
	res := run(t, "core.file.touched", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	wantChanged(t, run(t, "core.file.touched", params, nil), true)
	if got := mtimeOf(t, p); !got.Equal(want) {
		t.Fatalf("mtime = %v, want %v", got, want)
	}
	if got := atimeOf(t, p); !got.Equal(want) {
		t.Fatalf("atime = %v, want %v", got, want)
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.touched", params, nil), false)
	before.untouched(t, p)

	// On a directory (default preserve: unchanged; a time: changed once).
	d := filepath.Join(dir, "d")
	wantChanged(t, run(t, "core.file.directory", map[string]any{"path": d}, nil), true)
	wantChanged(t, run(t, "core.file.directory", map[string]any{"path": d}, nil), false)
	dp := map[string]any{"path": d, "modification_time": "202103040506.07"}
	res = run(t, "core.file.directory", dp, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "modification_time") || mtimeOf(t, d).Equal(want) {
		t.Fatalf("check: diff %q, mtime %v", res.Diff, mtimeOf(t, d))
	}
	wantChanged(t, run(t, "core.file.directory", dp, nil), true)
	if !mtimeOf(t, d).Equal(want) {
		t.Fatalf("directory mtime = %v", mtimeOf(t, d))
	}
	wantChanged(t, run(t, "core.file.directory", dp, nil), false)
}

func TestFileTouchedErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"bad time", map[string]any{"path": filepath.Join(dir, "f"), "modification_time": "yesterday"}, []string{"modification_time", "yesterday"}},
		{"bad format", map[string]any{"path": filepath.Join(dir, "f"), "access_time": "1", "access_time_format": "%Q"}, []string{"access_time_format", "%Q"}},
		{"relative", map[string]any{"path": "f"}, []string{"must be absolute"}},
		{"symlink", map[string]any{"path": filepath.Join(dir, "link")}, []string{"path is a symlink"}},
		{"missing parent", map[string]any{"path": filepath.Join(dir, "no/f")}, []string{"makedirs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.touched", tc.params, nil)
			wantErrContains(t, err, tc.want...)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); !os.IsNotExist(err) {
		t.Fatal("a refused touch created the file")
	}
}

func TestStrftimeLayout(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{defaultTimeFormat, "200601021504.05"},
		{"%d %b %Y %I:%M %p", "02 Jan 2006 03:04 PM"},
		{"100%%", "100%"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := strftimeLayout(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("strftimeLayout(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := strftimeLayout("%"); err == nil {
		t.Fatal("a lone % was accepted")
	}
}
