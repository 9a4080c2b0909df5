package dsl

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the want section of testdata/*.txtar golden files")

// archive is a txtar file: a comment, then "-- name --" sections.
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct {
	name string
	data []byte
}

func parseArchive(data []byte) archive {
	var a archive
	var cur *archiveFile
	var buf bytes.Buffer
	flush := func() {
		if cur == nil {
			a.comment = buf.String()
		} else {
			cur.data = bytes.Clone(buf.Bytes())
			a.files = append(a.files, *cur)
		}
		buf.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			cur = &archiveFile{name: strings.TrimSpace(trimmed[3 : len(trimmed)-3])}
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return a
}

func formatArchive(a archive) []byte {
	var b bytes.Buffer
	b.WriteString(a.comment)
	for _, f := range a.files {
		b.WriteString("-- " + f.name + " --\n")
		b.Write(f.data)
		if len(f.data) > 0 && f.data[len(f.data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// wantFile is the section holding the expected problems, one per line.
const wantFile = "want"

// TestGolden loads every testdata/*.txtar as a service repository and
// compares its problems with the archive's want section. Run with -update
// to rewrite the want sections after a deliberate change.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no golden files in testdata")
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a := parseArchive(data)
			fsys := fstest.MapFS{}
			var want string
			hasWant := false
			for _, f := range a.files {
				if f.name == wantFile {
					want, hasWant = string(f.data), true
					continue
				}
				fsys[f.name] = &fstest.MapFile{Data: f.data}
			}
			svc, problems := LoadFS(fsys)
			var got strings.Builder
			for _, p := range problems {
				got.WriteString(p.String() + "\n")
			}
			// Warnings (advice that does not fail validation) follow.
			if svc != nil {
				for _, w := range svc.Warnings {
					got.WriteString("warning: " + w.String() + "\n")
				}
			}
			if *update {
				var files []archiveFile
				for _, f := range a.files {
					if f.name != wantFile {
						files = append(files, f)
					}
				}
				a.files = append(files, archiveFile{name: wantFile, data: []byte(got.String())})
				if err := os.WriteFile(path, formatArchive(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !hasWant {
				t.Fatalf("%s has no -- want -- section; run go test -run TestGolden -update", path)
			}
			if diff := cmp.Diff(want, got.String()); diff != "" {
				t.Errorf("problems differ (-want +got):\n%s", diff)
			}
		})
	}
}
