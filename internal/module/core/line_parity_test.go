package core

import (
	"os"
	"path/filepath"
	"testing"
)

// Cases after Ansible's lineinfile integration tests and documentation
// (search_string, firstmatch, backrefs, insertafter/insertbefore, create);
// each was checked against ansible-core's lineinfile.

func TestFileLineParity(t *testing.T) {
	for _, tc := range []struct {
		name, start string
		params      map[string]any
		want        string
	}{
		{"search_string is literal text", "a.b = 1\naxb = 2\n",
			map[string]any{"search_string": "a.b", "line": "a.b = 9"}, "a.b = 9\naxb = 2\n"},
		{"search_string replaces the last line containing it", "x=1\ny\nx=2\n",
			map[string]any{"search_string": "x=", "line": "x=3"}, "x=1\ny\nx=3\n"},
		{"search_string with firstmatch", "x=1\ny\nx=2\n",
			map[string]any{"search_string": "x=", "line": "x=3", "firstmatch": true}, "x=3\ny\nx=2\n"},
		{"search_string not found appends", "y\n",
			map[string]any{"search_string": "x=", "line": "x=3"}, "y\nx=3\n"},
		{"regexp with firstmatch", "a=1\nb=2\na=3\n",
			map[string]any{"regexp": "^a=", "line": "a=9", "firstmatch": true}, "a=9\nb=2\na=3\n"},
		{"insert_after the last match", "[s]\nk=1\n[s]\nk=2\n",
			map[string]any{"line": "new", "insert_after": `^\[s\]`}, "[s]\nk=1\n[s]\nnew\nk=2\n"},
		{"insert_after with firstmatch", "[s]\nk=1\n[s]\nk=2\n",
			map[string]any{"line": "new", "insert_after": `^\[s\]`, "firstmatch": true}, "[s]\nnew\nk=1\n[s]\nk=2\n"},
		{"insert_before with firstmatch", "x\ny\nx\n",
			map[string]any{"line": "N", "insert_before": "x", "firstmatch": true}, "N\nx\ny\nx\n"},
		{"insert_before the last match", "x\ny\nx\n",
			map[string]any{"line": "N", "insert_before": "x"}, "x\ny\nN\nx\n"},
		{"insert_after matching the last line", "a\nb\n",
			map[string]any{"line": "c", "insert_after": "^b"}, "a\nb\nc\n"},
		{"insert_after BOF", "a\n",
			map[string]any{"line": "first", "insert_after": "BOF"}, "first\na\n"},
		{"insert_after EOF", "a\n",
			map[string]any{"line": "last", "insert_after": "EOF"}, "a\nlast\n"},
		{"insert_after matching nothing appends", "a\n",
			map[string]any{"line": "z", "insert_after": "^nothing"}, "a\nz\n"},
		{"regexp found ignores insert_before", "a\nb=1\n",
			map[string]any{"regexp": "^b=", "line": "b=2", "insert_before": "BOF"}, "a\nb=2\n"},
		{"regexp not found inserts at insert_before", "a\nb\n",
			map[string]any{"regexp": "^c=", "line": "c=1", "insert_before": "^b"}, "a\nc=1\nb\n"},
		{"backrefs expand groups", "listen 80\n",
			map[string]any{"regexp": `^listen (\d+)$`, "line": `listen 127.0.0.1:\1`, "backrefs": true}, "listen 127.0.0.1:80\n"},
		{"backrefs expand named groups, $ is literal", "a = 1\n",
			map[string]any{"regexp": `^(?P<key>\w+) = (\d)`, "line": `\g<key>: \g<2>$1`, "backrefs": true}, "a: 1$1\n"},
		{"an empty regexp matches every line", "a\nb\n",
			map[string]any{"regexp": "", "line": "z"}, "a\nz\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.conf")
			writeTestFile(t, p, tc.start)
			params := map[string]any{"path": p}
			for k, v := range tc.params {
				params[k] = v
			}
			applyTwice(t, "core.file.line", p, params, tc.want)
		})
	}
}

func TestFileLineUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name, start string
		params      map[string]any
	}{
		// backrefs: a regexp that matches nothing leaves the file alone
		// (nothing safe to insert), even with insert_after.
		{"backrefs without a match", "a=1\n", map[string]any{"regexp": `^c=(\d)`, "line": `c=\1`, "backrefs": true, "insert_after": "BOF"}},
		{"backrefs already expanded", "c=2\n", map[string]any{"regexp": `^c=(\d)$`, "line": `c=\1`, "backrefs": true}},
		{"line present, regexp not matching", "x\nk=1\n", map[string]any{"regexp": "^nomatch", "line": "k=1"}},
		{"insert_after: the line already follows", "a\nb\n", map[string]any{"line": "b", "insert_after": "^a"}},
		{"search_string: the line is already there", "k = 1\n", map[string]any{"search_string": "k =", "line": "k = 1"}},
		{"absent: search_string not in the file", "a\n", map[string]any{"search_string": "zz", "state": "absent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.conf")
			writeTestFile(t, p, tc.start)
			before := snap(t, p)
			params := map[string]any{"path": p}
			for k, v := range tc.params {
				params[k] = v
			}
			wantChanged(t, run(t, "core.file.line", params, nil), false)
			before.untouched(t, p)
		})
	}
}

func TestFileLineSearchStringAbsent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts")
	writeTestFile(t, p, "10.0.0.1 a\n10.0.0.10 b\n10x0x0x1 c\n")
	res := run(t, "core.file.line", map[string]any{"path": p, "search_string": "10.0.0.1", "state": "absent"}, nil)
	wantChanged(t, res, true)
	if got := readFile(t, p); got != "10x0x0x1 c\n" || res.Data["matched"] != int64(2) {
		t.Fatalf("content %q, data %v", got, res.Data)
	}
}

func TestFileLineCreateParents(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "limits.conf")
	// Check mode reports the creation and creates nothing, parents included.
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "line": "x", "create": true}, "x\n")
	for _, d := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b")} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("parent %s: %v %v", d, fi, err)
		}
	}
	// Without create, a missing parent is an error; absent converges.
	q := filepath.Join(dir, "c", "x.conf")
	_, err := runErr(t, "core.file.line", map[string]any{"path": q, "line": "x"}, nil)
	wantErrContains(t, err, "does not exist")
	wantChanged(t, run(t, "core.file.line", map[string]any{"path": q, "line": "x", "state": "absent"}, nil), false)
	if _, err := os.Stat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Fatalf("%s/c was created: %v", dir, err)
	}
}

// create: true makes missing parents through safefs: a parent symlink
// planted by a user (nobody, in its own directory) is not followed.
func TestFileEditCreateThroughPlantedSymlink(t *testing.T) {
	l := newH1Lab(t)
	asNobody(t, "ln -s "+l.important+" "+l.appdir+"/conf")
	for _, mod := range []string{"core.file.line", "core.file.block"} {
		t.Run(mod, func(t *testing.T) {
			params := map[string]any{"path": l.appdir + "/conf/sub/app.conf", "create": true, "line": "x", "block": "x"}
			if mod == "core.file.line" {
				delete(params, "block")
			} else {
				delete(params, "line")
			}
			_, err := runErr(t, mod, params, nil)
			if err == nil {
				t.Fatal("wrote through a symlink nobody planted")
			}
			if _, err := os.Lstat(filepath.Join(l.important, "sub")); !os.IsNotExist(err) {
				t.Fatalf("a directory was created through the symlink: %v", err)
			}
		})
	}
}

func TestFileLineBadInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, p, "a\n")
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"regexp and search_string", map[string]any{"regexp": "a", "search_string": "a", "line": "x"}, "not both"},
		{"backrefs with search_string", map[string]any{"search_string": "a", "line": "x", "backrefs": true}, `"backrefs"`},
		{"backrefs without regexp", map[string]any{"line": "x", "backrefs": true}, `"backrefs" needs regexp`},
		{"backrefs to a missing group", map[string]any{"regexp": "(a)", "line": `\2`, "backrefs": true}, `group \2 does not exist`},
		{"backrefs to a missing name", map[string]any{"regexp": "(a)", "line": `\g<nope>`, "backrefs": true}, `no group named "nope"`},
		{"backrefs with a bad escape", map[string]any{"regexp": "(a)", "line": `\q`, "backrefs": true}, `\q is not an escape`},
		{"firstmatch not a bool", map[string]any{"line": "x", "firstmatch": "yes"}, `"firstmatch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"path": p}
			for k, v := range tc.params {
				params[k] = v
			}
			_, err := runErr(t, "core.file.line", params, nil)
			wantErrContains(t, err, tc.want)
			if got := readFile(t, p); got != "a\n" {
				t.Fatalf("file changed to %q", got)
			}
		})
	}
}
