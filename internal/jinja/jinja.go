// Package jinja renders Jinja2 templates as Ansible's template module does
// by default: gonja (a Go port of Jinja2) with StrictUndefined,
// trim_blocks on, Ansible's trailing-newline rule, the "#jinja2:" header
// overrides, and the Ansible filters roles use (see filters.go).
package jinja

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// Options are the Jinja environment settings a task may change; Default
// gives Ansible's template module defaults.
type Options struct {
	// TrimBlocks removes the first newline after a block tag.
	TrimBlocks bool
	// LstripBlocks strips spaces and tabs from the start of a line to a block tag.
	LstripBlocks bool
	// NewlineSequence is "\n", "\r\n" or "\r": the line ending of the output.
	NewlineSequence string
	// MaxBytes bounds the rendered output (0: no bound).
	MaxBytes int
	// MapKeys orders a map's keys where a template lists its entries
	// (items(), keys(), values(), the items and dict2items filters): the
	// order its YAML wrote them (issue 37). nil sorts them.
	MapKeys func(map[string]any) []string
}

// Default returns Ansible's defaults: trim_blocks true, lstrip_blocks
// false, newline_sequence "\n".
func Default() Options {
	return Options{TrimBlocks: true, NewlineSequence: "\n"}
}

// NewlineSequences are the values newline_sequence accepts.
var NewlineSequences = []string{"\n", "\r\n", "\r"}

// OnlyParams are the params of core.file.rendered that only the Jinja
// engine takes.
func OnlyParams() []string { return []string{"trim_blocks", "lstrip_blocks", "newline_sequence"} }

// Selected tells whether a template renders with Jinja: engine is
// "jinja", or engine is empty and the name ends in .j2.
func Selected(name, engine string) bool {
	if engine != "" {
		return engine == "jinja"
	}
	return strings.HasSuffix(name, ".j2")
}

// ParseNewline reads a newline_sequence as Ansible does: the escapes
// \n, \r\n, \r or the characters themselves.
func ParseNewline(s string) (string, error) {
	switch s {
	case `\n`, "\n":
		return "\n", nil
	case `\r\n`, "\r\n":
		return "\r\n", nil
	case `\r`, "\r":
		return "\r", nil
	}
	return "", fmt.Errorf("newline_sequence %q: want \\n, \\r\\n or \\r", s)
}

// ManagedDefault is the value of ansible_managed unless the data sets it.
const ManagedDefault = "Soul Stack managed"

// Error is a template error with the template file and line (0 when unknown).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Render renders the template name of fsys with data as its variables.
// Includes and imports resolve from the template's own directory, then
// templates/, then the root of fsys. An undefined variable is an error.
func Render(fsys fs.FS, name string, data map[string]any, o Options) (out []byte, err error) {
	defer recoverPanic(name, &err)
	src, err := readTemplate(fsys, name)
	if err != nil {
		return nil, err
	}
	body, cfg, shift, err := prepare(name, src, o)
	if err != nil {
		return nil, err
	}
	loader := newLoader(fsys, name, body)
	env := environment(o.MaxBytes, cfg.NewlineSequence, o.MapKeys)
	t, err := exec.NewTemplate(name, cfg, loader, env)
	if err != nil {
		return nil, syntaxError(fsys, name, body, cfg, shift, err)
	}
	vars := make(map[string]any, len(data)+4)
	for k, v := range data {
		vars[k] = v
	}
	if _, ok := vars["ansible_managed"]; !ok {
		vars["ansible_managed"] = ManagedDefault
	}
	buf := &capBuffer{limit: o.MaxBytes}
	if err := execute(t, env, cfg, loader, buf, exec.NewContext(vars)); err != nil {
		if errors.Is(err, errTooLarge) || strings.Contains(err.Error(), errTooLarge.Error()) {
			return nil, &Error{File: name, Msg: errTooLarge.Error()}
		}
		return nil, renderError(name, shift, err)
	}
	out = buf.Bytes()
	// Ansible renders without keep_trailing_newline and then adds back
	// the newlines the source ended with that the output lacks.
	want, have := trailingNewlines(src), trailingNewlines(out)
	for ; have < want; have++ {
		if err := buf.writeString(cfg.NewlineSequence); err != nil {
			return nil, &Error{File: name, Msg: err.Error()}
		}
	}
	return buf.Bytes(), nil
}

// Check parses the template name of fsys and reports its syntax errors
// with file:line; included templates are checked when rendered.
func Check(fsys fs.FS, name string) (err error) {
	defer recoverPanic(name, &err)
	src, err := readTemplate(fsys, name)
	if err != nil {
		return err
	}
	body, cfg, shift, err := prepare(name, src, Default())
	if err != nil {
		return err
	}
	if _, err := exec.NewTemplate(name, cfg, newLoader(fsys, name, body), environment(0, cfg.NewlineSequence, nil)); err != nil {
		return syntaxError(fsys, name, body, cfg, shift, err)
	}
	return nil
}

// recoverPanic turns a panic of gonja (e.g. 'x' * -1) into an error of
// the template rather than the end of the process.
func recoverPanic(name string, err *error) {
	if r := recover(); r != nil {
		*err = &Error{File: name, Msg: fmt.Sprintf("rendering failed: %v", r)}
	}
}

func readTemplate(fsys fs.FS, name string) ([]byte, error) {
	if fsys == nil {
		return nil, fmt.Errorf("template %s: no files to read it from", name)
	}
	src, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("template %s not found in the scenario or destiny directory", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading template %s: %w", name, err)
	}
	return src, nil
}

// prepare applies the "#jinja2:" header of src over o and returns the
// body to parse, the gonja config, and how many lines the header took
// (added back to the lines of errors so that they match the file).
func prepare(name string, src []byte, o Options) (string, *config.Config, int, error) {
	body, shift := string(src), 0
	if strings.HasPrefix(body, "#jinja2:") {
		eol := strings.IndexByte(body, '\n')
		line := body[len("#jinja2:"):]
		rest := ""
		if eol >= 0 {
			line, rest = body[len("#jinja2:"):eol], body[eol+1:]
		}
		if err := applyHeader(&o, line); err != nil {
			return "", nil, 0, &Error{File: name, Line: 1, Msg: err.Error()}
		}
		body, shift = rest, 1
	}
	if o.NewlineSequence == "" {
		o.NewlineSequence = "\n"
	}
	if !validNewline(o.NewlineSequence) {
		return "", nil, 0, &Error{File: name, Msg: fmt.Sprintf("newline_sequence %q must be one of \\n, \\r\\n, \\r", o.NewlineSequence)}
	}
	cfg := config.New()
	cfg.StrictUndefined = true
	cfg.TrimBlocks = o.TrimBlocks
	cfg.LeftStripBlocks = o.LstripBlocks
	cfg.KeepTrailingNewline = false
	cfg.NewlineSequence = o.NewlineSequence
	return body, cfg, shift, nil
}

func validNewline(s string) bool {
	for _, n := range NewlineSequences {
		if s == n {
			return true
		}
	}
	return false
}

// applyHeader reads "key: value, key: value" as Ansible does (values are
// Python literals; only the environment settings we support are taken).
func applyHeader(o *Options, line string) error {
	for _, pair := range strings.Split(line, ",") {
		k, v, ok := strings.Cut(pair, ":")
		if !ok {
			return fmt.Errorf("failed to parse jinja2 override %q: use key: value", strings.TrimSpace(pair))
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "trim_blocks", "lstrip_blocks":
			var b bool
			switch v {
			case "True":
				b = true
			case "False":
			default:
				return fmt.Errorf("jinja2 override %s: want True or False, got %s", k, v)
			}
			if k == "trim_blocks" {
				o.TrimBlocks = b
			} else {
				o.LstripBlocks = b
			}
		case "newline_sequence":
			s, err := strconv.Unquote(strings.Replace(v, "'", "\"", 2))
			if err != nil || !validNewline(s) {
				return fmt.Errorf("jinja2 override newline_sequence: want '\\n', '\\r\\n' or '\\r', got %s", v)
			}
			o.NewlineSequence = s
		case "keep_trailing_newline":
			// Ansible's trailing-newline rule applies whatever this says.
		default:
			return fmt.Errorf("jinja2 override %s is not supported (trim_blocks, lstrip_blocks, newline_sequence are)", k)
		}
	}
	return nil
}

func trailingNewlines(b []byte) int {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\n'; i-- {
		n++
	}
	return n
}

var (
	syntaxLine = regexp.MustCompile(`\(Line: (\d+) Col: \d+, near "[^"]*"\)$`)
	renderLine = regexp.MustCompile(`at line (\d+)`)
)

// syntaxError turns a gonja parse error into an Error with the line; the
// template source gonja puts in its message is left out. Some gonja
// errors (in a tag's arguments) carry no line: the line is then the first
// one whose prefix of body fails with the same message.
func syntaxError(fsys fs.FS, name, body string, cfg *config.Config, shift int, err error) error {
	msg, line := parseMessage(err)
	if line == 0 {
		line = failingLine(fsys, name, body, cfg, msg)
	}
	if line > 0 {
		line += shift
	}
	return &Error{File: name, Line: line, Msg: "syntax error: " + msg}
}

// failingLine finds, by bisection, the first line whose prefix of body
// fails with msg (an error in a tag keeps failing the same way as lines
// are added after it).
func failingLine(fsys fs.FS, name, body string, cfg *config.Config, msg string) int {
	ls := strings.SplitAfter(body, "\n")
	fails := func(n int) bool {
		prefix := strings.Join(ls[:n], "")
		_, err := exec.NewTemplate(name, cfg, newLoader(fsys, name, prefix), environment(0, cfg.NewlineSequence, nil))
		if err == nil {
			return false
		}
		m, _ := parseMessage(err)
		return m == msg
	}
	lo, hi := 1, len(ls)
	if !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func parseMessage(err error) (string, int) {
	var se *parser.SyntaxError
	if errors.As(err, &se) && se.Line > 0 {
		return se.Message, se.Line
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner
	}
	msg := err.Error()
	if m := syntaxLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return strings.TrimSpace(strings.TrimSuffix(msg, m[0])), line
	}
	return msg, 0
}

// renderError keeps the outermost line gonja reports: the line in name of
// the statement that failed (an include's own line for errors inside it).
func renderError(name string, shift int, err error) error {
	msg := strings.TrimPrefix(err.Error(), "unable to execute template: ")
	line := 0
	if m := renderLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		line += shift
	}
	return &Error{File: name, Line: line, Msg: msg}
}

// errTooLarge is returned once the output passes Options.MaxBytes.
var errTooLarge = errors.New("the rendered template is over the size limit of a template")

// capBuffer is a bytes.Buffer that refuses to grow past limit (0: none).
type capBuffer struct {
	bytes.Buffer
	limit int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if b.limit > 0 && b.Len()+len(p) > b.limit {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

func (b *capBuffer) WriteString(s string) (int, error) { return b.Write([]byte(s)) }

func (b *capBuffer) writeString(s string) error {
	_, err := b.Write([]byte(s))
	return err
}
