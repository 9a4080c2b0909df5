package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Template is a string with {{ }} placeholders (SPEC §13), parsed at load:
//
//	{{ var }}          the value: strings raw, anything else as JSON
//	{{*var}}           the value as JSON (arrays stay JSON arrays)
//	{{*var | expr}}    expr (JMESPath) applied to each element of var; the
//	                   non-empty results joined with newlines
//
// Var names may start with @ (@deps, @deps_status).
type Template struct {
	src   string
	parts []part
}

type part struct {
	text   string // literal text when !ref
	ref    bool
	star   bool
	name   string
	filter *Filter // only with star
}

var varNameRE = regexp.MustCompile(`^@?[A-Za-z_][A-Za-z0-9_-]*`)

// ParseTemplate parses s. It fails on an unterminated {{, an empty or
// malformed placeholder, and an expression that does not compile.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{src: s}
	rest := s
	for {
		i := indexPlaceholder(rest)
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{text: rest})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, part{text: rest[:i]})
		}
		body, n, err := scanPlaceholder(rest[i+2:])
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", s, err)
		}
		p, err := parsePlaceholder(body)
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", s, err)
		}
		t.parts = append(t.parts, p)
		rest = rest[i+2+n:]
	}
}

// indexPlaceholder returns the index of the first "{{" that opens a
// placeholder, or -1. In "{{{" the first brace is literal text, so JSON like
// {"a":{{x}}} and {{{x}}} both work.
func indexPlaceholder(s string) int {
	i := strings.Index(s, "{{")
	if i < 0 {
		return -1
	}
	for i+2 < len(s) && s[i+2] == '{' {
		i++
	}
	return i
}

// scanPlaceholder finds the "}}" closing a placeholder whose body starts at
// s. Braces of a JMESPath multi-select hash and anything inside a quoted
// literal (' " `) do not close it. It returns the body and the number of
// bytes consumed including the closing braces.
func scanPlaceholder(s string) (string, int, error) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"', '`':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return "", 0, fmt.Errorf("unterminated %c quote inside {{ }}", c)
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			if i+1 < len(s) && s[i+1] == '}' {
				return s[:i], i + 2, nil
			}
			return "", 0, fmt.Errorf("unbalanced } inside {{ }}")
		}
	}
	return "", 0, fmt.Errorf("unterminated {{")
}

// secretRefPrefix names the value of a store secret among a task's vars:
// {{ secret("db_pw") }} reads "@secret:db_pw", which no declared var can be
// named (':' is not a var name character) and which is never stored.
const secretRefPrefix = "@secret:"

var secretCallRE = regexp.MustCompile(`^secret\(\s*(?:"([A-Za-z][A-Za-z0-9_.-]{0,127})"|'([A-Za-z][A-Za-z0-9_.-]{0,127})')\s*\)$`)

// SecretName returns the store secret a var name of Vars refers to
// ({{ secret("name") }}), or "".
func SecretName(varName string) string {
	n, _ := strings.CutPrefix(varName, secretRefPrefix)
	if n == varName {
		return ""
	}
	return n
}

func parsePlaceholder(body string) (part, error) {
	b := strings.TrimSpace(body)
	if strings.HasPrefix(b, "secret(") {
		m := secretCallRE.FindStringSubmatch(b)
		if m == nil {
			return part{}, fmt.Errorf("{{%s}}: secret takes one quoted secret name: {{ secret(\"db_password\") }}", body)
		}
		return part{ref: true, name: secretRefPrefix + m[1] + m[2]}, nil
	}
	p := part{ref: true}
	if strings.HasPrefix(b, "*") {
		p.star = true
		b = strings.TrimSpace(b[1:])
	}
	p.name = varNameRE.FindString(b)
	if p.name == "" {
		return part{}, fmt.Errorf("{{%s}}: expected a var name", body)
	}
	rest := strings.TrimSpace(b[len(p.name):])
	switch {
	case rest == "":
		return p, nil
	case !p.star:
		return part{}, fmt.Errorf("{{%s}}: unexpected %q after the var name (only {{*var | expr}} takes an expression)", body, rest)
	case !strings.HasPrefix(rest, "|"):
		return part{}, fmt.Errorf("{{%s}}: unexpected %q after the var name (expected | expr)", body, rest)
	}
	expr := strings.TrimSpace(rest[1:])
	if expr == "" {
		return part{}, fmt.Errorf("{{%s}}: empty expression after |", body)
	}
	f, err := CompileFilter(expr)
	if err != nil {
		return part{}, fmt.Errorf("{{%s}}: %w", body, err)
	}
	p.filter = f
	return p, nil
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Vars lists the var names the template references, in order.
func (t *Template) Vars() []string {
	var out []string
	for _, p := range t.parts {
		if p.ref {
			out = append(out, p.name)
		}
	}
	return out
}

// IsLiteral reports whether the template has no placeholders.
func (t *Template) IsLiteral() bool {
	for _, p := range t.parts {
		if p.ref {
			return false
		}
	}
	return true
}

// Render expands the template with vars.
func (t *Template) Render(vars map[string]any) (string, error) {
	var sb strings.Builder
	for _, p := range t.parts {
		if !p.ref {
			sb.WriteString(p.text)
			continue
		}
		s, err := p.render(vars)
		if err != nil {
			return "", err
		}
		sb.WriteString(s)
	}
	return sb.String(), nil
}

// Value is Render, except that a template that is exactly one {{ var }} or
// {{*var}} placeholder yields the var's typed value (SPEC §13: const).
func (t *Template) Value(vars map[string]any) (any, error) {
	if len(t.parts) == 1 && t.parts[0].ref && t.parts[0].filter == nil {
		v, ok := vars[t.parts[0].name]
		if !ok {
			return nil, fmt.Errorf("unknown var %q", t.parts[0].name)
		}
		return normalize(v)
	}
	return t.Render(vars)
}

func (p part) render(vars map[string]any) (string, error) {
	v, ok := vars[p.name]
	if !ok {
		return "", fmt.Errorf("unknown var %q", p.name)
	}
	switch {
	case p.filter != nil:
		return p.each(v)
	case p.star:
		return toJSON(v), nil
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return toJSON(v), nil
}

// each applies the filter to each element and joins the results that are
// not JMESPath-false (null, false, "", [], {}) with newlines.
func (p part) each(v any) (string, error) {
	v, err := normalize(v)
	if err != nil {
		return "", err
	}
	var elems []any
	switch x := v.(type) {
	case nil:
	case []any:
		elems = x
	default:
		elems = []any{x}
	}
	var lines []string
	for _, e := range elems {
		r, err := p.filter.Search(e)
		if err != nil {
			return "", fmt.Errorf("{{*%s | …}}: %w", p.name, err)
		}
		if isFalsy(r) {
			continue
		}
		if s, ok := r.(string); ok {
			lines = append(lines, s)
		} else {
			lines = append(lines, toJSON(r))
		}
	}
	return strings.Join(lines, "\n"), nil
}

func isFalsy(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// marshalJSON is json.Marshal without HTML escaping (so "&&" and "<" stay
// readable in commands and logs).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
