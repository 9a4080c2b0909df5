package core

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// Cases after Ansible's blockinfile and replace integration tests and
// documentation (prepend_newline/append_newline of 2.16, markers,
// multi-line insertafter, replace's before/after and \1 groups).

func TestFileBlockParity(t *testing.T) {
	const b, e = "# BEGIN M", "# END M"
	for _, tc := range []struct {
		name, start string
		params      map[string]any
		want        string
	}{
		{"prepend_newline after a line", "l1\nl2\n",
			map[string]any{"insert_after": "^l1", "prepend_newline": true},
			"l1\n\n" + b + "\nX\n" + e + "\nl2\n"},
		{"prepend_newline at the top of the file adds none", "l1\n",
			map[string]any{"insert_before": "^l1", "prepend_newline": true},
			b + "\nX\n" + e + "\nl1\n"},
		{"prepend_newline after a blank line adds none", "l1\n\nl2\n",
			map[string]any{"insert_after": "^$", "prepend_newline": true},
			"l1\n\n" + b + "\nX\n" + e + "\nl2\n"},
		{"append_newline before a line", "l1\nl2\n",
			map[string]any{"insert_after": "^l1", "append_newline": true},
			"l1\n" + b + "\nX\n" + e + "\n\nl2\n"},
		{"append_newline at the end of the file adds none", "l1\n",
			map[string]any{"append_newline": true},
			"l1\n" + b + "\nX\n" + e + "\n"},
		{"both around an existing block", "l1\n" + b + "\nold\n" + e + "\nl2\n",
			map[string]any{"append_newline": true, "prepend_newline": true},
			"l1\n\n" + b + "\nX\n" + e + "\n\nl2\n"},
		{"the last markers delimit the block, in either order", e + "\nl1\n" + b + "\nold\nl2\n",
			map[string]any{},
			b + "\nX\n" + e + "\nold\nl2\n"},
		{"insert_before the last match", "k\nx\nk\n",
			map[string]any{"insert_before": "^k"},
			"k\nx\n" + b + "\nX\n" + e + "\nk\n"},
		{"a (?m) insert_after matches across lines", "A =\n  (B =\nC\n",
			map[string]any{"insert_after": `(?m)A =\n.*\(B =`},
			"A =\n  (B =\n" + b + "\nX\n" + e + "\nC\n"},
		{"without (?m) a pattern with \\n matches no line: EOF", "A =\n  (B =\nC\n",
			map[string]any{"insert_after": `A =\n.*\(B =`},
			"A =\n  (B =\nC\n" + b + "\nX\n" + e + "\n"},
		{"a (?m) insert_before goes before the line where the match starts", "a\nb\nc\n",
			map[string]any{"insert_before": `(?m)b\nc`},
			"a\n" + b + "\nX\n" + e + "\nb\nc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.conf")
			writeTestFile(t, p, tc.start)
			params := map[string]any{"path": p, "block": "X", "marker": "# {mark} M"}
			for k, v := range tc.params {
				params[k] = v
			}
			applyTwice(t, "core.file.block", p, params, tc.want)
		})
	}
}

// Removing a block never adds blank lines, whatever append/prepend say.
func TestFileBlockRemoveIgnoresNewlines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, p, "l1\n# BEGIN M\nX\n# END M\nl2\n")
	applyTwice(t, "core.file.block", p, map[string]any{"path": p, "marker": "# {mark} M", "state": "absent", "prepend_newline": true, "append_newline": true}, "l1\nl2\n")
}

func TestFileReplaceParity(t *testing.T) {
	const text = "one two\nthree four\nfive six\nseven eight\n"
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
		n      int64
	}{
		{"after: only the text after the first match", map[string]any{"regexp": " ", "replace": "_", "after": "three"},
			"one two\nthree_four\nfive_six\nseven_eight\n", 3},
		{"before: only the text before the last match", map[string]any{"regexp": " ", "replace": "_", "before": "five"},
			"one_two\nthree_four\nfive six\nseven eight\n", 2},
		{"after and before: between them", map[string]any{"regexp": " ", "replace": "_", "after": "two", "before": "seven"},
			"one two\nthree_four\nfive_six\nseven eight\n", 2},
		{"groups as Ansible writes them", map[string]any{"regexp": `^(\w+) (?P<second>\w+)$`, "replace": `\g<second> \1`},
			"two one\nfour three\nsix five\neight seven\n", 4},
		{"groups as Go writes them, $$ a dollar", map[string]any{"regexp": `^(\w+) (\w+)$`, "replace": `$2=${1}$$`},
			"two=one$\nfour=three$\nsix=five$\neight=seven$\n", 4},
		{"escapes: \\\\ and \\n", map[string]any{"regexp": `^one two$`, "replace": `a\\b\nc`},
			"a\\b\nc\nthree four\nfive six\nseven eight\n", 1},
		{"^ and $ at each line, . not across lines", map[string]any{"regexp": `^(.+)$`, "replace": `"\1"`},
			"\"one two\"\n\"three four\"\n\"five six\"\n\"seven eight\"\n", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			writeTestFile(t, p, text)
			params := map[string]any{"path": p}
			for k, v := range tc.params {
				params[k] = v
			}
			res := run(t, "core.file.replace", params, &module.Env{Check: true})
			wantChanged(t, res, true)
			if res.Data["replacements"] != tc.n || readFile(t, p) != text {
				t.Fatalf("check mode: data %v, content %q", res.Data, readFile(t, p))
			}
			wantChanged(t, run(t, "core.file.replace", params, nil), true)
			if got := readFile(t, p); got != tc.want {
				t.Fatalf("content %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFileReplaceSectionNotFound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, p, "a b\nc d\n")
	for _, params := range []map[string]any{
		{"after": "zzz"}, {"before": "zzz"},
		// after must come before before: "d" then "a" never matches.
		{"after": "d", "before": "a"},
	} {
		params["path"], params["regexp"], params["replace"] = p, " ", "_"
		before := snap(t, p)
		res := run(t, "core.file.replace", params, nil)
		wantChanged(t, res, false)
		if !strings.Contains(res.Msg, "after/before matched nothing") {
			t.Errorf("%v: msg %q", params, res.Msg)
		}
		before.untouched(t, p)
	}
	// The regexp matching nothing in the section changes nothing either.
	res := run(t, "core.file.replace", map[string]any{"path": p, "regexp": "a", "replace": "z", "after": "c"}, nil)
	wantChanged(t, res, false)
}

func TestFileReplaceBadInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, p, "a b\n")
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"bad after", map[string]any{"regexp": "a", "after": "("}, `param "after"`},
		{"bad before", map[string]any{"regexp": "a", "before": "[b-a]"}, `param "before"`},
		{"missing group", map[string]any{"regexp": "(a)", "replace": `\2`}, `group \2 does not exist`},
		{"missing Go group", map[string]any{"regexp": "(a)", "replace": `$3`}, `group $3 does not exist`},
		{"Go name that is no group", map[string]any{"regexp": "(a)", "replace": `$1x`}, `$1x names no group`},
		{"bad \\g", map[string]any{"regexp": "(a)", "replace": `\g1`}, `\g must be followed by`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"path": p}
			for k, v := range tc.params {
				params[k] = v
			}
			_, err := runErr(t, "core.file.replace", params, nil)
			wantErrContains(t, err, tc.want)
			if readFile(t, p) != "a b\n" {
				t.Fatal("file changed")
			}
		})
	}
}

func TestCheckReplaceSource(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string // "" for no error
	}{
		{"port ${1}", `write \1 or \g<1>`},
		{"${ 12 }x", `regexp group 12`},
		{"${name}", `\g<name>`},
		{`\1 \g<name> $1 $name`, ""},
		{"$${1}", ""},
		{"${ input.port }", ""},
		{"${item}", ""},
		{"${ vars.x + 1 }", ""},
	} {
		t.Run(tc.src, func(t *testing.T) {
			err := checkReplaceSource(tc.src)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			wantErrContains(t, err, tc.want)
		})
	}
}
