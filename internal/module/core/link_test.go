package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

func readlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileLink(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "v1.conf"), "1")
	writeTestFile(t, filepath.Join(dir, "v2.conf"), "2")
	link := filepath.Join(dir, "current.conf")
	params := map[string]any{"path": link, "target": "v1.conf"}

	res := run(t, "core.file.link", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatal("check mode created the link")
	}
	wantChanged(t, run(t, "core.file.link", params, nil), true)
	if readlink(t, link) != "v1.conf" || readFile(t, link) != "1" {
		t.Fatal("link not made")
	}
	before := snap(t, link)
	wantChanged(t, run(t, "core.file.link", params, nil), false)
	before.untouched(t, link)

	// Repointing is atomic and reports the previous target.
	res = run(t, "core.file.link", map[string]any{"path": link, "target": filepath.Join(dir, "v2.conf")}, nil)
	wantChanged(t, res, true)
	if res.Data["previous"] != "v1.conf" || !strings.Contains(res.Diff, "-> v1.conf") || readFile(t, link) != "2" {
		t.Fatalf("repoint: %+v", res)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d entries: a temporary link was left behind", len(entries))
	}

	// A dangling target needs force; a file needs force; a directory never.
	_, err := runErr(t, "core.file.link", map[string]any{"path": link, "target": "nope"}, nil)
	wantErrContains(t, err, "does not exist", "force: true")
	wantChanged(t, run(t, "core.file.link", map[string]any{"path": link, "target": "nope", "force": true}, nil), true)
	file := filepath.Join(dir, "v1.conf")
	_, err = runErr(t, "core.file.link", map[string]any{"path": file, "target": "v2.conf"}, nil)
	wantErrContains(t, err, "not a symlink", "force: true")
	if readFile(t, file) != "1" {
		t.Fatal("the file was replaced without force")
	}
	wantChanged(t, run(t, "core.file.link", map[string]any{"path": file, "target": "v2.conf", "force": true}, nil), true)
	if readlink(t, file) != "v2.conf" {
		t.Fatal("force did not replace the file")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = runErr(t, "core.file.link", map[string]any{"path": sub, "target": "v2.conf", "force": true}, nil)
	wantErrContains(t, err, "is a directory")
	_, err = runErr(t, "core.file.link", map[string]any{"path": filepath.Join(dir, "no/dir/l"), "target": "/"}, nil)
	wantErrContains(t, err, "does not exist", "makedirs")

	// Under --root an absolute target is checked inside the root.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/nginx/sites-available"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(root, "etc/nginx/sites-available/app"), "server {}\n")
	env := &module.Env{Root: root}
	wantChanged(t, run(t, "core.file.link", map[string]any{"path": "/etc/nginx/sites-enabled/app", "target": "/etc/nginx/sites-available/app", "makedirs": true}, env), true)
	if readlink(t, filepath.Join(root, "etc/nginx/sites-enabled/app")) != "/etc/nginx/sites-available/app" {
		t.Fatal("link under the root not made")
	}
}

func TestFileStat(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	writeTestFile(t, f, "hello\n")
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1700000000, 0)
	if err := os.Chtimes(f, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	before := snap(t, f)
	// Read-only: it runs the same in check mode.
	res := run(t, "core.file.stat", map[string]any{"path": f}, &module.Env{Check: true})
	wantChanged(t, res, false)
	d := res.Data
	uid := int64(os.Geteuid())
	if d["exists"] != true || d["type"] != "file" || d["mode"] != "0640" || d["size"] != int64(6) || d["uid"] != uid ||
		d["sha256"] != "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" || d["mtime"] != int64(1700000000) || d["owner"] == "" {
		t.Fatalf("stat of a file = %v", d)
	}
	before.untouched(t, f)
	d = run(t, "core.file.stat", map[string]any{"path": filepath.Join(dir, "l")}, nil).Data
	if d["type"] != "symlink" || d["target"] != "f" || d["sha256"] != "" {
		t.Fatalf("stat of a link = %v", d)
	}
	d = run(t, "core.file.stat", map[string]any{"path": filepath.Join(dir, "l"), "follow": true}, nil).Data
	if d["type"] != "file" || d["size"] != int64(6) {
		t.Fatalf("stat following a link = %v", d)
	}
	d = run(t, "core.file.stat", map[string]any{"path": dir}, nil).Data
	if d["type"] != "directory" {
		t.Fatalf("stat of a directory = %v", d)
	}
	for _, p := range []string{filepath.Join(dir, "none"), filepath.Join(dir, "no/such/file")} {
		d = run(t, "core.file.stat", map[string]any{"path": p}, nil).Data
		if d["exists"] != false || d["type"] != "" {
			t.Fatalf("stat of a missing path = %v", d)
		}
	}
	_, err := runErr(t, "core.file.stat", map[string]any{"path": "rel"}, nil)
	wantErrContains(t, err, "must be absolute")
}
