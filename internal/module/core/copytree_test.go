package core

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// listTree returns "rel mode" for every entry under dir ("rel -> target"
// for a symlink), sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
			return nil
		}
		out = append(out, rel+" "+formatMode(fi.Mode()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func bundleTree() fstest.MapFS {
	return fstest.MapFS{
		"files/site/index.html":      {Data: []byte("<h1>hi</h1>\n")},
		"files/site/css/main.css":    {Data: []byte("body{}\n")},
		"files/site/img/empty/.keep": {Data: nil},
		"files/other":                {Data: []byte("x")},
	}
}

// TestFileCopiedTree copies a directory of files/: "site" creates
// path/site, "site/" copies the content into path; directory_mode is
// given to created directories; second run unchanged; check mode first.
func TestFileCopiedTree(t *testing.T) {
	for _, tc := range []struct {
		src    string
		prefix string
	}{{"site", "site/"}, {"site/", ""}} {
		t.Run(tc.src, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "srv/www") // parents created, as in Ansible
			env := &module.Env{Files: bundleTree()}
			params := map[string]any{"path": dest, "src": tc.src, "mode": "0640", "directory_mode": "0750"}
			res := run(t, "core.file.copied", params, &module.Env{Files: env.Files, Check: true})
			wantChanged(t, res, true)
			if _, err := os.Lstat(dest); !os.IsNotExist(err) {
				t.Fatal("check mode created the destination")
			}
			if !strings.Contains(res.Diff, "+<h1>hi</h1>") || !strings.Contains(res.Diff, "create directory") {
				t.Errorf("check diff = %q", res.Diff)
			}
			res = run(t, "core.file.copied", params, env)
			wantChanged(t, res, true)
			p := tc.prefix
			want := []string{p + "css 0750", p + "css/main.css 0640", p + "img 0750", p + "img/empty 0750", p + "img/empty/.keep 0640", p + "index.html 0640"}
			if p != "" {
				want = append([]string{"site 0750"}, want...)
			}
			sort.Strings(want)
			if diff := cmp.Diff(want, listTree(t, dest)); diff != "" {
				t.Fatalf("tree (-want +got):\n%s", diff)
			}
			if res.Data["files"] != int64(3) {
				t.Errorf("data = %v", res.Data)
			}
			before := snap(t, filepath.Join(dest, p+"index.html"))
			wantChanged(t, run(t, "core.file.copied", params, env), false)
			wantChanged(t, run(t, "core.file.copied", params, &module.Env{Files: env.Files, Check: true}), false)
			before.untouched(t, filepath.Join(dest, p+"index.html"))

			// An edited file is put back; an existing directory keeps its
			// mode; a file not in the source is left alone.
			writeTestFile(t, filepath.Join(dest, p+"index.html"), "edited")
			writeTestFile(t, filepath.Join(dest, p+"extra"), "mine")
			if err := os.Chmod(filepath.Join(dest, p+"css"), 0o700); err != nil {
				t.Fatal(err)
			}
			res = run(t, "core.file.copied", params, env)
			wantChanged(t, res, true)
			if readFile(t, filepath.Join(dest, p+"index.html")) != "<h1>hi</h1>\n" || readFile(t, filepath.Join(dest, p+"extra")) != "mine" ||
				permOf(t, filepath.Join(dest, p+"css")) != 0o700 {
				t.Fatalf("second copy: %v", listTree(t, dest))
			}
		})
	}
}

// TestFileCopiedForceFalse: force: false copies only what is missing.
func TestFileCopiedForceFalse(t *testing.T) {
	dir := t.TempDir()
	env := &module.Env{Files: bundleTree()}
	p := filepath.Join(dir, "other")
	writeTestFile(t, p, "local")
	params := map[string]any{"path": p, "src": "other", "force": false}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.copied", params, &module.Env{Files: env.Files, Check: true}), false)
	wantChanged(t, run(t, "core.file.copied", params, env), false)
	before.untouched(t, p)
	missing := filepath.Join(dir, "new")
	res := run(t, "core.file.copied", map[string]any{"path": missing, "src": "other", "force": false}, env)
	wantChanged(t, res, true)
	if readFile(t, missing) != "x" {
		t.Fatal("force: false did not copy a missing file")
	}
	// Trees: the existing file stays, the missing ones arrive.
	dest := filepath.Join(dir, "www")
	writeTreeFile(t, filepath.Join(dest, "index.html"), "mine")
	wantChanged(t, run(t, "core.file.copied", map[string]any{"path": dest, "src": "site/", "force": false}, env), true)
	if readFile(t, filepath.Join(dest, "index.html")) != "mine" || readFile(t, filepath.Join(dest, "css/main.css")) != "body{}\n" {
		t.Fatalf("force: false on a tree: %v", listTree(t, dest))
	}
}

// TestFileCopiedIntoDirectory: a file copied to an existing directory, or
// a path ending in "/", lands inside it under the source's name.
func TestFileCopiedIntoDirectory(t *testing.T) {
	dir := t.TempDir()
	env := &module.Env{Files: bundleTree()}
	wantChanged(t, run(t, "core.file.copied", map[string]any{"path": dir, "src": "other"}, env), true)
	if readFile(t, filepath.Join(dir, "other")) != "x" {
		t.Fatal("not copied into the directory")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, run(t, "core.file.copied", map[string]any{"path": sub + "/", "src": "site/index.html"}, env), true)
	if readFile(t, filepath.Join(sub, "index.html")) != "<h1>hi</h1>\n" {
		t.Fatal("not copied into path/")
	}
	// path/ that does not exist yet is created, with its parents.
	deep := filepath.Join(dir, "new/deeper") + "/"
	ep := map[string]any{"path": deep, "src": "other"}
	wantChanged(t, run(t, "core.file.copied", ep, &module.Env{Files: env.Files, Check: true}), true)
	if _, err := os.Lstat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Fatal("check mode created directories")
	}
	wantChanged(t, run(t, "core.file.copied", ep, env), true)
	if readFile(t, filepath.Join(deep, "other")) != "x" {
		t.Fatal("not copied into a new path/")
	}
	wantChanged(t, run(t, "core.file.copied", ep, env), false)
	// Without the slash a missing parent is still an error (makedirs).
	_, err := runErr(t, "core.file.copied", map[string]any{"path": filepath.Join(dir, "nope/x"), "src": "other"}, env)
	wantErrContains(t, err, "makedirs")
}

// TestFileCopiedRemoteSrc: a file and a tree of the host, symlinks inside
// the tree copied as symlinks, never followed.
func TestFileCopiedRemoteSrc(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeTreeFile(t, filepath.Join(src, "conf/app.conf"), "port 1\n")
	writeTreeFile(t, filepath.Join(src, "README"), "read me\n")
	secret := filepath.Join(dir, "secret")
	writeTreeFile(t, secret, "s\n")
	if err := os.Symlink(secret, filepath.Join(src, "conf/link")); err != nil {
		t.Fatal(err)
	}

	f := filepath.Join(dir, "copy.conf")
	fp := map[string]any{"path": f, "src": filepath.Join(src, "conf/app.conf"), "remote_src": true, "mode": "0600"}
	wantChanged(t, run(t, "core.file.copied", fp, &module.Env{Check: true}), true)
	if _, err := os.Lstat(f); !os.IsNotExist(err) {
		t.Fatal("check mode copied")
	}
	wantChanged(t, run(t, "core.file.copied", fp, nil), true)
	if readFile(t, f) != "port 1\n" || permOf(t, f) != 0o600 {
		t.Fatal("remote file not copied")
	}
	wantChanged(t, run(t, "core.file.copied", fp, nil), false)

	dest := filepath.Join(dir, "dest")
	tp := map[string]any{"path": dest, "src": src, "remote_src": true}
	res := run(t, "core.file.copied", tp, &module.Env{Check: true})
	wantChanged(t, res, true)
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Fatal("check mode copied the tree")
	}
	wantChanged(t, run(t, "core.file.copied", tp, nil), true)
	want := []string{"src 0755", "src/README 0644", "src/conf 0755", "src/conf/app.conf 0644", "src/conf/link -> " + secret}
	if diff := cmp.Diff(want, listTree(t, dest)); diff != "" {
		t.Fatalf("tree (-want +got):\n%s", diff)
	}
	wantChanged(t, run(t, "core.file.copied", tp, nil), false)
	// A symlink as src itself is followed (to a file the rules allow).
	lp := map[string]any{"path": filepath.Join(dir, "via-link"), "src": filepath.Join(src, "conf/link"), "remote_src": true}
	wantChanged(t, run(t, "core.file.copied", lp, nil), true)
	if readFile(t, filepath.Join(dir, "via-link")) != "s\n" {
		t.Fatal("src symlink not followed")
	}
}

// TestFileCopiedRemoteSrcConfined: under --root, remote_src reads inside
// the root only, an absolute symlink included.
func TestFileCopiedRemoteSrcConfined(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeTreeFile(t, filepath.Join(outside, "secret"), "outside\n")
	writeTreeFile(t, filepath.Join(root, "srv/secret"), "inside\n")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "srv/abs")); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	_, err := runErr(t, "core.file.copied", map[string]any{"path": "/srv/copy", "src": filepath.Join(outside, "secret"), "remote_src": true}, env)
	wantErrContains(t, err, "does not exist")
	// The absolute link restarts at the root: it names root/<outside>/secret.
	_, err = runErr(t, "core.file.copied", map[string]any{"path": "/srv/copy", "src": "/srv/abs", "remote_src": true}, env)
	wantErrContains(t, err, "does not exist")
	wantChanged(t, run(t, "core.file.copied", map[string]any{"path": "/srv/copy", "src": "/srv/secret", "remote_src": true}, env), true)
	if readFile(t, filepath.Join(root, "srv/copy")) != "inside\n" {
		t.Fatal("confined copy")
	}
}

// TestH1CopiedRemoteSrcPlantedLinks: nobody cannot make root copy root's
// file to a place nobody reads: a symlink or a hard link planted as src in
// nobody's directory is refused.
func TestH1CopiedRemoteSrcPlantedLinks(t *testing.T) {
	l := newH1Lab(t)
	asNobody(t, "ln -s "+l.sudoers+" "+filepath.Join(l.appdir, "src-link"))
	if err := os.Link(l.sudoers, filepath.Join(l.appdir, "src-hard")); err != nil { // as a host without protected_hardlinks would allow
		t.Fatal(err)
	}
	out := filepath.Join(l.appdir, "out")
	for _, src := range []string{"src-link", "src-hard"} {
		t.Run(src, func(t *testing.T) {
			_, err := runErr(t, "core.file.copied", map[string]any{"path": out, "src": filepath.Join(l.appdir, src), "remote_src": true, "mode": "0644"}, nil)
			if !errors.Is(err, safefs.ErrUnsafe) {
				t.Fatalf("err %v, want unsafe", err)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Fatal("root's file was copied out")
			}
		})
	}
	// The same through a tree: nobody's directory holding the hard link.
	_, err := runErr(t, "core.file.copied", map[string]any{"path": filepath.Join(l.u, "tree-out"), "src": l.appdir + "/", "remote_src": true}, nil)
	if !errors.Is(err, safefs.ErrUnsafe) {
		t.Fatalf("tree: err %v, want unsafe", err)
	}
	rootOwned(t, l.sudoers, 0o440, "ORIGINAL ROOT-OWNED CONTENT\n")
}

func TestFileCopiedErrors(t *testing.T) {
	dir := t.TempDir()
	env := &module.Env{Files: bundleTree()}
	writeTestFile(t, filepath.Join(dir, "file"), "x")
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"relative remote src", map[string]any{"path": filepath.Join(dir, "a"), "src": "etc/x", "remote_src": true}, []string{"src", "absolute"}},
		{"missing remote src", map[string]any{"path": filepath.Join(dir, "a"), "src": "/nonexistent/x", "remote_src": true}, []string{"does not exist"}},
		{"bad directory_mode", map[string]any{"path": filepath.Join(dir, "a"), "src": "site", "directory_mode": "rwx"}, []string{"directory_mode"}},
		{"pin on a tree", map[string]any{"path": filepath.Join(dir, "a"), "src": "site", "sha256": "00"}, []string{"sha256", "directory"}},
		{"tree onto a file", map[string]any{"path": filepath.Join(dir, "file"), "src": "site/"}, []string{"not a directory", "(file 0644)"}},
		{"absolute bundle src", map[string]any{"path": filepath.Join(dir, "a"), "src": "/etc/passwd"}, []string{"remote_src"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.copied", tc.params, env)
			wantErrContains(t, err, tc.want...)
		})
	}
}
