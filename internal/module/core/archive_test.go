package core

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/soulstack/soulstack/internal/module"
)

type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func makeTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), Linkname: e.link}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func compress(t *testing.T, kind string, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch kind {
	case "tar":
		return raw
	case "tar.gz":
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(raw)
		_ = w.Close()
	case "tar.xz":
		w, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(raw)
		_ = w.Close()
	case "tar.zst":
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(raw)
		_ = w.Close()
	}
	return buf.Bytes()
}

var goodTar = []tarEntry{
	{name: "app/", typ: tar.TypeDir, mode: 0o755},
	{name: "app/bin/run", typ: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\necho run\n"},
	{name: "app/conf/app.conf", typ: tar.TypeReg, mode: 0o640, body: "a=1\n"},
	{name: "app/current", typ: tar.TypeSymlink, link: "conf/app.conf"},
}

func TestArchiveExtractedFormats(t *testing.T) {
	for _, kind := range []string{"tar", "tar.gz", "tar.xz", "tar.zst"} {
		t.Run(kind, func(t *testing.T) {
			dest := t.TempDir()
			env := &module.Env{Files: fstest.MapFS{"files/app." + kind: {Data: compress(t, kind, makeTar(t, goodTar))}}}
			params := map[string]any{"path": dest, "src": "app." + kind}
			check := *env
			check.Check = true
			res := run(t, "core.archive.extracted", params, &check)
			wantChanged(t, res, true)
			if entries, _ := os.ReadDir(dest); len(entries) != 0 {
				t.Fatal("check mode extracted something")
			}
			res = run(t, "core.archive.extracted", params, env)
			wantChanged(t, res, true)
			if res.Data["format"] != kind || res.Data["entries"] != int64(4) {
				t.Errorf("data %v", res.Data)
			}
			if readFile(t, filepath.Join(dest, "app/current")) != "a=1\n" || readFile(t, filepath.Join(dest, "app/bin/run")) != "#!/bin/sh\necho run\n" {
				t.Fatal("content not extracted")
			}
			if fi, _ := os.Stat(filepath.Join(dest, "app/conf/app.conf")); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", fi.Mode())
			}
			before := snap(t, filepath.Join(dest, "app/bin/run"))
			wantChanged(t, run(t, "core.archive.extracted", params, env), false)
			before.untouched(t, filepath.Join(dest, "app/bin/run"))
			// A local edit is put back, and only that file.
			writeTestFile(t, filepath.Join(dest, "app/conf/app.conf"), "edited\n")
			res = run(t, "core.archive.extracted", params, env)
			wantChanged(t, res, true)
			if w := res.Data["written"].([]string); len(w) != 1 || w[0] != "app/conf/app.conf" {
				t.Errorf("written %v", w)
			}
			before.untouched(t, filepath.Join(dest, "app/bin/run"))
		})
	}
}

func TestArchiveExtractedZipAndHostSrc(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	f, _ := zw.Create("site/index.html")
	_, _ = f.Write([]byte("<h1>hi</h1>\n"))
	_ = zw.Close()
	dir := t.TempDir()
	src := filepath.Join(dir, "site.zip")
	if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "www")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"path": dest, "src": src}
	wantChanged(t, run(t, "core.archive.extracted", params, nil), true)
	if readFile(t, filepath.Join(dest, "site/index.html")) != "<h1>hi</h1>\n" {
		t.Fatal("zip not extracted")
	}
	wantChanged(t, run(t, "core.archive.extracted", params, nil), false)
	// creates: present means the archive is not even read.
	params = map[string]any{"path": dest, "src": filepath.Join(dir, "missing.zip"), "creates": filepath.Join(dest, "site")}
	wantChanged(t, run(t, "core.archive.extracted", params, nil), false)
}

// Entries that would leave the destination are refused before anything
// is written (issue 15's faults; the H1 rule for archives).
func TestArchiveExtractedRefusesEscapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"dotdot", []tarEntry{{name: "ok", typ: tar.TypeReg, body: "x"}, {name: "../evil", typ: tar.TypeReg, body: "x"}}, "climbs out"},
		{"absolute", []tarEntry{{name: "/etc/evil", typ: tar.TypeReg, body: "x"}}, "absolute name"},
		{"absolute symlink", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "/etc"}, {name: "l/passwd", typ: tar.TypeReg, body: "x"}}, "out of the destination"},
		{"relative symlink out", []tarEntry{{name: "a/l", typ: tar.TypeSymlink, link: "../../etc"}}, "out of the destination"},
		{"hard link", []tarEntry{{name: "h", typ: tar.TypeLink, link: "/etc/shadow"}}, "hard links"},
		{"device", []tarEntry{{name: "d", typ: tar.TypeChar}}, "devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			env := &module.Env{Files: fstest.MapFS{"files/x.tar": {Data: makeTar(t, tc.entries)}}}
			_, err := runErr(t, "core.archive.extracted", map[string]any{"path": dest, "src": "x.tar"}, env)
			wantErrContains(t, err, tc.want, "nothing was extracted")
			if entries, _ := os.ReadDir(dest); len(entries) != 0 {
				t.Fatalf("something was extracted: %v", entries)
			}
		})
	}
	// A symlink inside the destination that an entry writes through stays
	// confined (a link made by an earlier entry resolves inside dest).
	dest := t.TempDir()
	env := &module.Env{Files: fstest.MapFS{"files/x.tar": {Data: makeTar(t, []tarEntry{
		{name: "d/", typ: tar.TypeDir, mode: 0o755}, {name: "l", typ: tar.TypeSymlink, link: "d"}, {name: "l/f", typ: tar.TypeReg, body: "in\n", mode: 0o644}})}}}
	wantChanged(t, run(t, "core.archive.extracted", map[string]any{"path": dest, "src": "x.tar"}, env), true)
	if readFile(t, filepath.Join(dest, "d/f")) != "in\n" {
		t.Fatal("write through an inner link did not land inside the destination")
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		env    *module.Env
		want   string
	}{
		{"not an archive", map[string]any{"path": dest, "src": "junk"}, &module.Env{Files: fstest.MapFS{"files/junk": {Data: []byte(strings.Repeat("junk", 200))}}}, "not a tar"},
		{"missing src", map[string]any{"path": dest, "src": "none.tgz"}, env, "not found"},
		{"missing dest", map[string]any{"path": filepath.Join(dest, "no/such"), "src": "x.tar"}, env, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.archive.extracted", tc.params, tc.env)
			wantErrContains(t, err, tc.want)
		})
	}
}
