package core

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// archiveTime is the mtime of every entry of the archives built here.
var archiveTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// selectTree is the layout of Ansible's unarchive include/exclude cases:
// a few directories of files whose names say what a test wants of them.
var selectTree = []tarEntry{
	{name: "include/", typ: tar.TypeDir, mode: 0o755},
	{name: "include/include-1.txt", typ: tar.TypeReg, mode: 0o644, body: "i1\n"},
	{name: "include/include-2.txt", typ: tar.TypeReg, mode: 0o644, body: "i2\n"},
	{name: "exclude/", typ: tar.TypeDir, mode: 0o755},
	{name: "exclude/exclude-1.txt", typ: tar.TypeReg, mode: 0o644, body: "e1\n"},
	{name: "exclude/exclude-2.txt", typ: tar.TypeReg, mode: 0o644, body: "e2\n"},
	{name: "other/", typ: tar.TypeDir, mode: 0o755},
	{name: "other/include-1.ext", typ: tar.TypeReg, mode: 0o644, body: "o1\n"},
	{name: "other/exclude-1.ext", typ: tar.TypeReg, mode: 0o644, body: "oe1\n"},
	{name: "other/other-1.ext", typ: tar.TypeReg, mode: 0o755, body: "oo1\n"},
}

// buildArchive makes an archive of kind (tar.gz, tar.xz, zip) holding
// entries, every one dated archiveTime.
func buildArchive(t *testing.T, kind string, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	if kind == "zip" {
		zw := zip.NewWriter(&buf)
		for _, e := range entries {
			h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: archiveTime}
			m := fs.FileMode(e.mode)
			if e.typ == tar.TypeDir {
				m |= fs.ModeDir
			}
			h.SetMode(m)
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write([]byte(e.body))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), ModTime: archiveTime}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return compress(t, kind, buf.Bytes())
}

// extractCase is one destination with the env and params to extract
// into it.
type extractCase struct {
	dest   string
	env    *module.Env
	params map[string]any
}

func newExtractCase(t *testing.T, kind string, entries []tarEntry, extra map[string]any) extractCase {
	t.Helper()
	dest := t.TempDir()
	env := &module.Env{Files: fstest.MapFS{"files/a." + kind: {Data: buildArchive(t, kind, entries)}}}
	params := map[string]any{"path": dest, "src": "a." + kind}
	for k, v := range extra {
		params[k] = v
	}
	return extractCase{dest: dest, env: env, params: params}
}

func (c extractCase) run(t *testing.T, check bool) domain.Result {
	t.Helper()
	env := *c.env
	env.Check = check
	return run(t, "core.archive.extracted", c.params, &env)
}

// tree lists the files and directories under the destination.
func (c extractCase) tree(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(c.dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == c.dest {
			return err
		}
		rel, _ := filepath.Rel(c.dest, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// converge runs check mode (changed, nothing written), apply (changed),
// apply again (unchanged), and returns the tree and the last result.
func (c extractCase) converge(t *testing.T) ([]string, domain.Result) {
	t.Helper()
	res := c.run(t, true)
	wantChanged(t, res, true)
	if got := c.tree(t); len(got) != 0 {
		t.Fatalf("check mode extracted %v", got)
	}
	checkFiles := res.Data["files"]
	wantChanged(t, c.run(t, false), true)
	tree := c.tree(t)
	res = c.run(t, false)
	wantChanged(t, res, false)
	if diff := cmp.Diff(checkFiles, res.Data["files"]); diff != "" {
		t.Errorf("files in check mode and on the second run differ (-check +second):\n%s", diff)
	}
	return tree, res
}

func TestArchiveExtractedExclude(t *testing.T) {
	for _, kind := range []string{"tar.gz", "tar.xz", "zip"} {
		t.Run(kind, func(t *testing.T) {
			c := newExtractCase(t, kind, selectTree, map[string]any{
				"list_files": true, "exclude": []any{"exclude/exclude-*.txt", "other/exclude-1.ext"}})
			tree, res := c.converge(t)
			want := []string{"exclude/", "include/", "include/include-1.txt", "include/include-2.txt", "other/", "other/include-1.ext", "other/other-1.ext"}
			if diff := cmp.Diff(want, tree); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			wantFiles := []string{"include/", "include/include-1.txt", "include/include-2.txt", "exclude/", "other/", "other/include-1.ext", "other/other-1.ext"}
			if diff := cmp.Diff(wantFiles, res.Data["files"]); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
	// A directory excluded takes its content with it.
	c := newExtractCase(t, "tar.gz", selectTree, map[string]any{"exclude": []any{"exclude/", "other"}})
	tree, res := c.converge(t)
	if diff := cmp.Diff([]string{"include/", "include/include-1.txt", "include/include-2.txt"}, tree); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if _, ok := res.Data["files"]; ok {
		t.Errorf("files returned without list_files: %v", res.Data)
	}
}

func TestArchiveExtractedInclude(t *testing.T) {
	for _, kind := range []string{"tar.gz", "tar.xz", "zip"} {
		t.Run(kind, func(t *testing.T) {
			c := newExtractCase(t, kind, selectTree, map[string]any{"list_files": true, "include": []any{"include/include-1.txt"}})
			tree, res := c.converge(t)
			if diff := cmp.Diff([]string{"include/", "include/include-1.txt"}, tree); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"include/include-1.txt"}, res.Data["files"]); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if res.Data["entries"] != int64(len(selectTree)) {
				t.Errorf("entries %v, want every entry of the archive (%d)", res.Data["entries"], len(selectTree))
			}
		})
	}
	// Globs match across / as fnmatch does; a directory brings its content.
	c := newExtractCase(t, "zip", selectTree, map[string]any{"include": []any{"*-1.ext", "include"}})
	tree, _ := c.converge(t)
	want := []string{"include/", "include/include-1.txt", "include/include-2.txt", "other/", "other/exclude-1.ext", "other/include-1.ext", "other/other-1.ext"}
	if diff := cmp.Diff(want, tree); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	// creates still short-cuts the archive with include.
	c = newExtractCase(t, "tar.gz", selectTree, nil)
	c.params["include"] = []any{"other/other-1.ext"}
	c.params["creates"] = filepath.Join(c.dest, "other/other-1.ext")
	wantChanged(t, c.run(t, false), true)
	writeTestFile(t, filepath.Join(c.dest, "other/other-1.ext"), "edited\n")
	res := c.run(t, false)
	wantChanged(t, res, false)
	if !strings.Contains(res.Msg, "exists") || readFile(t, filepath.Join(c.dest, "other/other-1.ext")) != "edited\n" {
		t.Fatalf("creates did not stop the extraction: %q", res.Msg)
	}
}

func TestArchiveExtractedSelectErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra map[string]any
		want  []string
	}{
		{"include and exclude", map[string]any{"include": []any{"include"}, "exclude": []any{"foo"}}, []string{`param "include"`, "mutually exclusive"}},
		{"include of nothing", map[string]any{"include": []any{"include", "nosuch/*"}}, []string{`param "include"`, `"nosuch/*" matches no entry`}},
		{"empty pattern", map[string]any{"exclude": []any{""}}, []string{`param "exclude"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newExtractCase(t, "tar.gz", selectTree, tc.extra)
			_, err := runErr(t, "core.archive.extracted", c.params, c.env)
			wantErrContains(t, err, tc.want...)
			if got := c.tree(t); len(got) != 0 {
				t.Errorf("a refused call extracted %v", got)
			}
		})
	}
}

func TestArchiveExtractedKeepNewer(t *testing.T) {
	entries := []tarEntry{{name: "foo-unarchive.txt", typ: tar.TypeReg, mode: 0o644, body: "from the archive\n"}}
	for _, tc := range []struct {
		name      string
		keepNewer bool
		mtime     time.Time
		want      string
		changed   bool
	}{
		{"newer kept", true, archiveTime.Add(time.Hour), "boo", false},
		{"older replaced", true, archiveTime.Add(-time.Hour), "from the archive\n", true},
		{"newer replaced without keep_newer", false, archiveTime.Add(time.Hour), "from the archive\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newExtractCase(t, "tar.gz", entries, map[string]any{"keep_newer": tc.keepNewer})
			p := filepath.Join(c.dest, "foo-unarchive.txt")
			writeTestFile(t, p, "boo")
			if err := os.Chtimes(p, tc.mtime, tc.mtime); err != nil {
				t.Fatal(err)
			}
			wantChanged(t, c.run(t, true), tc.changed)
			if readFile(t, p) != "boo" {
				t.Fatal("check mode wrote the file")
			}
			wantChanged(t, c.run(t, false), tc.changed)
			if got := readFile(t, p); got != tc.want {
				t.Fatalf("content %q, want %q", got, tc.want)
			}
			wantChanged(t, c.run(t, false), false)
		})
	}
}

func TestArchiveExtractedMode(t *testing.T) {
	tree := []tarEntry{
		{name: "d/", typ: tar.TypeDir, mode: 0o755},
		{name: "d/foo-unarchive.txt", typ: tar.TypeReg, mode: 0o644, body: "foo\n"},
		{name: "d/run.sh", typ: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\n"},
	}
	modeOf := func(t *testing.T, p string) string {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return formatMode(fi.Mode() & permBits)
	}
	for _, kind := range []string{"tar.gz", "zip"} {
		t.Run(kind, func(t *testing.T) {
			c := newExtractCase(t, kind, tree, map[string]any{"mode": "u+rwX,g-rwx,o-rwx", "list_files": true})
			c.converge(t)
			got := []string{modeOf(t, filepath.Join(c.dest, "d")), modeOf(t, filepath.Join(c.dest, "d/foo-unarchive.txt")), modeOf(t, filepath.Join(c.dest, "d/run.sh"))}
			if diff := cmp.Diff([]string{"0700", "0600", "0700"}, got); diff != "" {
				t.Fatalf("modes dir, file, script (-want +got):\n%s", diff)
			}
			// Another mode over the extraction changes the modes only.
			c.params["mode"] = "u+rwX,g-wx,o-wx,g+r,o+r"
			wantChanged(t, c.run(t, false), true)
			if m := modeOf(t, filepath.Join(c.dest, "d/foo-unarchive.txt")); m != "0644" {
				t.Fatalf("mode %s, want 0644", m)
			}
			// The same modes spelled otherwise: nothing to do.
			c.params["mode"] = "u+rwX-x,g-wx,o-wx,g+r,o+r"
			c.params["include"] = []any{"d/foo-unarchive.txt"}
			wantChanged(t, c.run(t, false), false)
			c.params["mode"] = "u+rwX-x,g-rwx,o=x"
			wantChanged(t, c.run(t, false), true)
			if m := modeOf(t, filepath.Join(c.dest, "d/foo-unarchive.txt")); m != "0601" {
				t.Fatalf("mode %s, want 0601", m)
			}
			c.params["mode"] = "0640"
			c.params["include"] = []any{"d/*.txt"}
			wantChanged(t, c.run(t, false), true)
			if m := modeOf(t, filepath.Join(c.dest, "d/foo-unarchive.txt")); m != "0640" {
				t.Fatalf("mode %s, want 0640", m)
			}
			wantChanged(t, c.run(t, false), false)
		})
	}
	for _, bad := range []string{"u=foo", "foo=r", "ufoo=r", "abc=r", "ao=r", "oa=r", "0999", "u+r,"} {
		t.Run("bad "+bad, func(t *testing.T) {
			c := newExtractCase(t, "tar.gz", tree, map[string]any{"mode": bad})
			_, err := runErr(t, "core.archive.extracted", c.params, c.env)
			wantErrContains(t, err, `param "mode"`, bad)
		})
	}
}

func TestArchiveGlob(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"exclude/exclude-*.txt", "exclude/exclude-1.txt", true},
		{"exclude/exclude-*.txt", "exclude/sub/exclude-1.txt", false},
		{"*.txt", "a/b/c.txt", true},
		{"file-?.txt", "file-1.txt", true},
		{"file-?.txt", "file-10.txt", false},
		{"file-[12].txt", "file-2.txt", true},
		{"file-[!12].txt", "file-2.txt", false},
		{"file-[!12].txt", "file-3.txt", true},
		{"a.b", "axb", false},
		{"[", "[", true},
	} {
		t.Run(tc.glob+" "+tc.name, func(t *testing.T) {
			re, err := globRegexp(tc.glob)
			if err != nil {
				t.Fatal(err)
			}
			if got := re.MatchString(tc.name); got != tc.want {
				t.Errorf("match = %v, want %v (%s)", got, tc.want, re)
			}
		})
	}
}

// TestArchiveExtractedBzip2: a tar.bz2 (testdata/app.tar.bz2, made with
// GNU tar -j: Go has no bzip2 writer) extracts and then converges.
func TestArchiveExtractedBzip2(t *testing.T) {
	raw, err := os.ReadFile("testdata/app.tar.bz2")
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	env := &module.Env{Files: fstest.MapFS{"files/app.tar.bz2": {Data: raw}}}
	params := map[string]any{"path": dest, "src": "app.tar.bz2", "list_files": true}
	res := run(t, "core.archive.extracted", params, env)
	wantChanged(t, res, true)
	if res.Data["format"] != "tar.bz2" || readFile(t, filepath.Join(dest, "app/bin/run")) != "#!/bin/sh\necho run\n" {
		t.Fatalf("format %v, files %v", res.Data["format"], res.Data["files"])
	}
	wantChanged(t, run(t, "core.archive.extracted", params, env), false)
}
