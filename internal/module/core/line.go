package core

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.file.line", module.Schema{
		Summary: "Ensure one line is in a file (or is not), replacing the line a regexp matches",
		Params: editParams(map[string]module.Param{
			"line":          str(false, "the line (without newline); required for state: present. With backrefs, \\1 or \\g<name> are the regexp's groups"),
			"regexp":        regexpParam(false, "regexp (Go RE2, searched in each line) of the line to replace (the last match; the first with firstmatch) for state: present, or of every line to remove for state: absent"),
			"search_string": str(false, "literal text searched in each line, instead of regexp: the line containing it is replaced (state: present) or removed (state: absent)"),
			"backrefs":      {Type: module.TypeBool, Default: false, Description: "with regexp: line is expanded with the groups of the match (\\1, \\g<1>, \\g<name>); when regexp matches no line the file is left as it is (nothing is inserted)"},
			"firstmatch":    {Type: module.TypeBool, Default: false, Description: "use the first line regexp, search_string, insert_after or insert_before matches instead of the last"},
			"insert_after":  insertAfterParam,
			"insert_before": insertBeforeParam,
			"state":         stateParam,
			"create":        createParam,
		}),
		AtLeastOne: [][]string{{"line", "regexp", "search_string"}},
		Output: withFields(fileOutput, map[string]module.Field{
			"matched": outputField(module.TypeInt, "lines that matched regexp or search_string (or equal line) before the edit"),
		}),
	}, fileLine)
}

// lineSpec is what core.file.line looks for and puts.
type lineSpec struct {
	line     string
	re       *regexp.Regexp // regexp, or nil
	search   *string        // search_string, or nil
	tmpl     string         // line as a Go template, with backrefs
	backrefs bool
	first    bool
	pos      insertPos
}

// find reports whether a line matches regexp or search_string.
func (s lineSpec) find(l string) bool {
	switch {
	case s.re != nil:
		return s.re.MatchString(l)
	case s.search != nil:
		return strings.Contains(l, *s.search)
	}
	return false
}

// matches is what state: absent removes: lines matching regexp or
// search_string, else lines equal to line.
func (s lineSpec) matches(l string) bool {
	if s.re == nil && s.search == nil {
		return l == s.line
	}
	return s.find(l)
}

// fileLine is lineinfile: with state present, the last line matching
// regexp or search_string becomes line; with no match, line is inserted
// (insert_after/insert_before, EOF by default) unless it is already there.
// With state absent every matching line (or line equal to line) is
// removed.
func fileLine(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	s := lineSpec{line: a.str("line"), backrefs: a.boolean("backrefs", false), first: a.boolean("firstmatch", false)}
	hasLine, reStr := a.has("line"), a.str("regexp")
	if a.has("search_string") {
		ss := a.str("search_string")
		s.search = &ss
	}
	w, state, create, err := editorWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	if s.re, err = compileParam("regexp", reStr); err != nil {
		return domain.Result{}, err
	}
	if a.has("regexp") && reStr == "" {
		s.re = regexp.MustCompile("") // as Ansible: an empty regexp matches every line
	}
	if s.pos, err = parseInsertPos(a); err != nil {
		return domain.Result{}, err
	}
	s.pos.first = s.first
	switch {
	case s.re != nil && s.search != nil:
		return domain.Result{}, fmt.Errorf("give regexp or search_string, not both")
	case s.backrefs && s.search != nil:
		return domain.Result{}, fmt.Errorf("param \"backrefs\" works with regexp, not search_string")
	case state == "present" && s.backrefs && s.re == nil:
		return domain.Result{}, fmt.Errorf("param \"backrefs\" needs regexp")
	case state == "present" && !hasLine:
		return domain.Result{}, fmt.Errorf("param \"line\" is required with state: present")
	}
	if state == "present" && s.backrefs {
		if s.tmpl, err = pyTemplate("line", s.line, s.re, false); err != nil {
			return domain.Result{}, err
		}
	}
	matched := 0
	count := func(lines textLines) {
		for _, l := range lines {
			if s.matches(l) {
				matched++
			}
		}
	}
	if state == "absent" {
		w.missingOK = w.path + " does not exist; no line to remove"
		w.edit = func(old []byte, _ bool) ([]byte, error) {
			lines := splitText(old)
			count(lines)
			var kept textLines
			for _, l := range lines {
				if !s.matches(l) {
					kept = append(kept, l)
				}
			}
			return editedContent(old, lines, kept), nil
		}
	} else {
		w.edit = func(old []byte, exists bool) ([]byte, error) {
			if !exists && !create {
				return nil, missingFile(w.path)
			}
			lines := splitText(old)
			count(lines)
			return editedContent(old, lines, s.present(lines)), nil
		}
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["matched"] = int64(matched)
	}
	return res, err
}

// present returns lines with the line in place, as Ansible's lineinfile
// does it: the line regexp or search_string matches (the last, or the
// first with firstmatch) is replaced; else a line equal to line is kept;
// else, unless backrefs, line is inserted at insert_after/insert_before
// (a regexp that matches nothing means EOF).
func (s lineSpec) present(lines textLines) textLines {
	at, ins := -1, -1
	var loc []int // the match, for backrefs
	if s.re != nil || s.search != nil {
		for i, l := range lines {
			if !s.find(l) {
				continue
			}
			at = i
			if s.re != nil {
				loc = s.re.FindStringSubmatchIndex(l)
			}
			if s.first {
				break
			}
		}
	}
	insRe := s.pos.re()
	if at < 0 {
		// As Ansible: one pass looks for the line itself and for
		// insert_after/insert_before; with firstmatch it stops at the
		// first insertion point.
		for i, l := range lines {
			if l == s.line {
				at = i
			} else if insRe != nil && insRe.MatchString(l) {
				ins = i
				if s.pos.after != nil {
					ins = i + 1
				}
				if s.first {
					break
				}
			}
		}
	}
	out := append(textLines(nil), lines...)
	switch {
	case at >= 0:
		want := s.line
		if s.backrefs && loc != nil {
			want = string(s.re.ExpandString(nil, s.tmpl, lines[at], loc))
		}
		out[at] = want
		return out
	case s.backrefs:
		return out // no match: nothing safe to write
	case s.pos.bof:
		return insertAt(out, 0, s.line)
	case ins < 0:
		return append(out, s.line)
	case s.pos.after != nil && ins == len(out):
		if out[ins-1] == s.line {
			return out
		}
		return append(out, s.line)
	case s.pos.after != nil && out[ins] == s.line:
		return out
	}
	return insertAt(out, ins, s.line)
}
