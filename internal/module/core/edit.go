package core

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/module"
)

// Shared by the in-place editors core.file.line, .block and .replace: the
// params, the line model of a text file and where an insertion goes.

// editParams are the params every editor shares with file.present, minus
// content.
func editParams(extra map[string]module.Param) map[string]module.Param {
	p := fileParams(map[string]module.Param{
		"validate": validateParam,
		"backup":   backupParam,
		"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755); create: true implies it, as in Ansible"},
	})
	for k, v := range extra {
		p[k] = v
	}
	return p
}

var (
	stateParam        = module.Param{Type: module.TypeString, Default: "present", Description: "present or absent"}
	createParam       = module.Param{Type: module.TypeBool, Default: false, Description: "create the file, and its missing parent directories (0755), when it does not exist (else that is an error for state: present)"}
	insertAfterParam  = module.Param{Type: module.TypeString, Check: checkInsertParam, Description: "where to insert when nothing matches yet: after the last line matching this regexp (Go RE2), EOF (the default) or BOF"}
	insertBeforeParam = module.Param{Type: module.TypeString, Check: checkInsertParam, Description: "where to insert when nothing matches yet: before the last line matching this regexp (Go RE2), or BOF"}
)

// regexpParam is a string param holding a Go RE2 regexp, checked when the
// scenario is validated.
func regexpParam(req bool, desc string) module.Param {
	p := str(req, desc)
	p.Check = checkRegexp
	return p
}

// checkRegexp is the Check of a regexp param (the DSL names the param).
func checkRegexp(s string) error {
	if _, err := regexp.Compile(s); err != nil {
		return fmt.Errorf("%q is not a valid regexp (Go RE2 syntax): %w", s, err)
	}
	return nil
}

// checkInsertParam is the Check of insert_after and insert_before.
func checkInsertParam(s string) error {
	if s == "BOF" || s == "EOF" {
		return nil
	}
	return checkRegexp(s)
}

// textLines is a text file as lines without their newlines.
type textLines []string

func splitText(b []byte) textLines {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// bytes joins the lines, each ending with a newline.
func (l textLines) bytes() []byte {
	if len(l) == 0 {
		return nil
	}
	return []byte(strings.Join(l, "\n") + "\n")
}

// editedContent returns the new content, or old itself when the lines did
// not change (so a file without a final newline is not touched).
func editedContent(old []byte, before, after textLines) []byte {
	if len(before) == len(after) {
		same := true
		for i := range before {
			if before[i] != after[i] {
				same = false
				break
			}
		}
		if same {
			return old
		}
	}
	return after.bytes()
}

// compileParam compiles a regexp param, naming it in the error.
func compileParam(name, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("param %q: %q is not a valid regexp (Go RE2 syntax): %w", name, expr, err)
	}
	return re, nil
}

// insertPos says where new lines go: insert_after (a regexp, EOF or
// BOF), insert_before (a regexp, or BOF); at most one may be given. A
// regexp that matches nothing means EOF, as in Ansible. first
// (firstmatch) uses the first matching line instead of the last.
type insertPos struct {
	after, before *regexp.Regexp
	bof           bool
	first         bool
}

func parseInsertPos(a *args) (insertPos, error) {
	after, before := a.str("insert_after"), a.str("insert_before")
	var p insertPos
	if after != "" && before != "" {
		return p, fmt.Errorf("give insert_after or insert_before, not both")
	}
	var err error
	switch {
	case before == "BOF" || after == "BOF":
		p.bof = true
	case before != "":
		p.before, err = compileParam("insert_before", before)
	case after != "" && after != "EOF":
		p.after, err = compileParam("insert_after", after)
	}
	return p, err
}

// re is the regexp of insert_after or insert_before, if any.
func (p insertPos) re() *regexp.Regexp {
	if p.after != nil {
		return p.after
	}
	return p.before
}

// index returns the position in lines where an insertion goes: before
// or after the last (with first: the first) line the regexp matches.
func (p insertPos) index(lines textLines) int {
	if p.bof {
		return 0
	}
	re, at := p.re(), -1
	if re == nil {
		return len(lines)
	}
	for i, l := range lines {
		if re.MatchString(l) {
			at = i
			if p.first {
				break
			}
		}
	}
	switch {
	case at < 0:
		return len(lines)
	case p.after != nil:
		return at + 1
	}
	return at
}

func insertAt(lines textLines, i int, add ...string) textLines {
	out := make(textLines, 0, len(lines)+len(add))
	out = append(out, lines[:i]...)
	out = append(out, add...)
	return append(out, lines[i:]...)
}

// editorWant parses the params every editor shares and the state.
func editorWant(a *args) (fileWant, string, bool, error) {
	state := a.str("state")
	if state == "" {
		state = "present"
	}
	create := a.boolean("create", false)
	w, err := parseFileWant(a)
	w.makedirs = w.makedirs || create // as Ansible: create makes the parents too
	if err != nil {
		return w, state, create, err
	}
	if state != "present" && state != "absent" {
		return w, state, create, fmt.Errorf("param \"state\": %q is not present or absent", state)
	}
	return w, state, create, nil
}

// missingFile is the error of an editor asked to edit a file that is not
// there.
func missingFile(path string) error {
	return fmt.Errorf("%s does not exist; set create: true to create it", path)
}
