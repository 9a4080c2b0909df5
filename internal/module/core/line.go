package core

import (
	"context"
	"fmt"
	"regexp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.file.line", module.Schema{
		Summary: "Ensure one line is in a file (or is not), replacing the line a regexp matches",
		Params: editParams(map[string]module.Param{
			"line":          str(false, "the line (without newline); required for state: present"),
			"regexp":        str(false, "regexp (Go RE2) of the line to replace (the last match) for state: present, or of every line to remove for state: absent"),
			"insert_after":  insertAfterParam,
			"insert_before": insertBeforeParam,
			"state":         stateParam,
			"create":        createParam,
		}),
		AtLeastOne: [][]string{{"line", "regexp"}},
		Output: withFields(fileOutput, map[string]module.Field{
			"matched": outputField(module.TypeInt, "lines that matched regexp (or equal line) before the edit"),
		}),
	}, fileLine)
}

// fileLine is lineinfile: with state present, the last line matching
// regexp becomes line; with no match, line is inserted (insert_after/
// insert_before, EOF by default) unless it is already there. With state
// absent every line matching regexp (or equal to line) is removed.
func fileLine(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	line, hasLine := a.str("line"), a.has("line")
	reStr := a.str("regexp")
	w, state, create, err := editorWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	re, err := compileParam("regexp", reStr)
	if err != nil {
		return domain.Result{}, err
	}
	pos, err := parseInsertPos(a)
	if err != nil {
		return domain.Result{}, err
	}
	if state == "present" && !hasLine {
		return domain.Result{}, fmt.Errorf("param \"line\" is required with state: present")
	}
	matches := func(s string) bool {
		if re != nil {
			return re.MatchString(s)
		}
		return s == line
	}
	matched := 0
	if state == "absent" {
		w.missingOK = w.path + " does not exist; no line to remove"
		w.edit = func(old []byte, _ bool) ([]byte, error) {
			lines := splitText(old)
			var kept textLines
			for _, l := range lines {
				if matches(l) {
					matched++
					continue
				}
				kept = append(kept, l)
			}
			return editedContent(old, lines, kept), nil
		}
	} else {
		w.edit = func(old []byte, exists bool) ([]byte, error) {
			if !exists && !create {
				return nil, missingFile(w.path)
			}
			lines := splitText(old)
			return editedContent(old, lines, presentLine(lines, line, re, pos, &matched)), nil
		}
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["matched"] = int64(matched)
	}
	return res, err
}

// presentLine returns lines with line in place: replacing the last regexp
// match, else kept when already present, else inserted at pos.
func presentLine(lines textLines, line string, re *regexp.Regexp, pos insertPos, matched *int) textLines {
	last := -1
	for i, l := range lines {
		if (re != nil && re.MatchString(l)) || (re == nil && l == line) {
			*matched++
			last = i
		}
	}
	if last >= 0 {
		out := append(textLines(nil), lines...)
		out[last] = line
		return out
	}
	for _, l := range lines {
		if l == line {
			return lines
		}
	}
	return insertAt(lines, pos.index(lines), line)
}
