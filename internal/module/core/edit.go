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
		"makedirs": {Type: module.TypeBool, Default: false, Description: "with create: true, create missing parent directories (0755)"},
	})
	for k, v := range extra {
		p[k] = v
	}
	return p
}

var (
	stateParam        = module.Param{Type: module.TypeString, Default: "present", Description: "present or absent"}
	createParam       = module.Param{Type: module.TypeBool, Default: false, Description: "create the file when it does not exist (else that is an error for state: present)"}
	insertAfterParam  = str(false, "where to insert when nothing matches yet: after the last line matching this regexp, or EOF (the default)")
	insertBeforeParam = str(false, "where to insert when nothing matches yet: before the last line matching this regexp, or BOF")
)

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

// insertPos says where new lines go: insert_after (a regexp, or EOF),
// insert_before (a regexp, or BOF); at most one may be given. A regexp
// that matches nothing means EOF, as in Ansible.
type insertPos struct {
	after, before *regexp.Regexp
	bof           bool
}

func parseInsertPos(a *args) (insertPos, error) {
	after, before := a.str("insert_after"), a.str("insert_before")
	var p insertPos
	if after != "" && before != "" {
		return p, fmt.Errorf("give insert_after or insert_before, not both")
	}
	var err error
	switch {
	case before == "BOF":
		p.bof = true
	case before != "":
		p.before, err = compileParam("insert_before", before)
	case after != "" && after != "EOF":
		p.after, err = compileParam("insert_after", after)
	}
	return p, err
}

// index returns the position in lines where an insertion goes.
func (p insertPos) index(lines textLines) int {
	switch {
	case p.bof:
		return 0
	case p.before != nil:
		for i := len(lines) - 1; i >= 0; i-- {
			if p.before.MatchString(lines[i]) {
				return i
			}
		}
	case p.after != nil:
		for i := len(lines) - 1; i >= 0; i-- {
			if p.after.MatchString(lines[i]) {
				return i + 1
			}
		}
	}
	return len(lines)
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
