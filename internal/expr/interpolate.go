package expr

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Template is a string with ${ } interpolations, parsed and compiled.
//
// Syntax: "${ expr }" evaluates the CEL expression expr (braces and string
// literals inside expr are balanced, so "${ {'a': 1}.a }" works); "$${" is
// a literal "${". A template that is exactly one "${ expr }" (no text
// around, not even spaces) yields the expression's typed value; otherwise
// the result is a string with each value rendered by Stringify.
type Template struct {
	Source string
	parts  []tplPart
}

type tplPart struct {
	lit  string
	prog *Program // nil for a literal part
	// offset is the byte offset of the expression text in Source.
	offset int
}

type templateEntry struct {
	t   *Template
	err error
}

// HasInterpolation reports whether s needs template processing (it holds
// "${", possibly escaped).
func HasInterpolation(s string) bool { return strings.Contains(s, "${") }

// ParseTemplate parses and compiles every ${ } of s (cached by source).
func (e *Env) ParseTemplate(s string) (*Template, error) {
	if v, ok := e.templates.Load(s); ok {
		return v.(*templateEntry).t, v.(*templateEntry).err
	}
	t, err := e.parseTemplate(s)
	if e.cached.Add(1) > maxCached {
		return t, err
	}
	v, _ := e.templates.LoadOrStore(s, &templateEntry{t, err})
	return v.(*templateEntry).t, v.(*templateEntry).err
}

func (e *Env) parseTemplate(s string) (*Template, error) {
	t := &Template{Source: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, tplPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := scanExpr(s, i+2)
			if err != nil {
				return nil, fmt.Errorf("${ at offset %d: %w", i, err)
			}
			src := s[i+2 : end]
			if strings.TrimSpace(src) == "" {
				return nil, fmt.Errorf("${ at offset %d: empty expression", i)
			}
			p, err := e.Compile(strings.TrimSpace(src))
			if err != nil {
				return nil, fmt.Errorf("${ %s }: %w", strings.TrimSpace(src), err)
			}
			flush()
			t.parts = append(t.parts, tplPart{prog: p, offset: i + 2})
			i = end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return t, nil
}

// scanExpr returns the index of the "}" closing an expression that starts
// at s[start], skipping nested braces and quoted CEL string literals.
func scanExpr(s string, start int) (int, error) {
	depth := 0
	for j := start; j < len(s); j++ {
		switch c := s[j]; c {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		case '\'', '"':
			end, err := skipString(s, j)
			if err != nil {
				return 0, err
			}
			j = end
		}
	}
	return 0, errors.New("unterminated ${: missing the closing }")
}

// skipString returns the index of the last byte of the string literal
// opening at s[i] (single, double or triple quoted).
func skipString(s string, i int) (int, error) {
	q := s[i]
	raw := i > 0 && (s[i-1] == 'r' || s[i-1] == 'R')
	delim := string(q)
	if strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		delim = strings.Repeat(string(q), 3)
	}
	for j := i + len(delim); j < len(s); j++ {
		if s[j] == '\\' && !raw {
			j++
			continue
		}
		if strings.HasPrefix(s[j:], delim) {
			return j + len(delim) - 1, nil
		}
	}
	return 0, errors.New("unterminated string literal inside ${ }")
}

// Whole reports whether the template is exactly one expression (and so
// yields a typed value).
func (t *Template) Whole() bool { return len(t.parts) == 1 && t.parts[0].prog != nil }

// Programs returns the compiled expressions of the template in order.
func (t *Template) Programs() []*Program {
	var out []*Program
	for _, p := range t.parts {
		if p.prog != nil {
			out = append(out, p.prog)
		}
	}
	return out
}

// TemplateExpr is one ${ } of a template: its program and the byte offset
// of its (trimmed) source in the template.
type TemplateExpr struct {
	Program *Program
	Offset  int
}

// Exprs returns the expressions of the template with their offsets.
func (t *Template) Exprs() []TemplateExpr {
	var out []TemplateExpr
	for _, p := range t.parts {
		if p.prog == nil {
			continue
		}
		off := p.offset
		for off < len(t.Source) && (t.Source[off] == ' ' || t.Source[off] == '\t' || t.Source[off] == '\n') {
			off++
		}
		out = append(out, TemplateExpr{Program: p.prog, Offset: off})
	}
	return out
}

// Refs merges the references of all expressions of the template.
func (t *Template) Refs() Refs {
	var r Refs
	for _, p := range t.Programs() {
		r = r.merge(p.Refs)
	}
	return r
}

// Render evaluates the template: the typed value when Whole, else a string.
func (t *Template) Render(ctx context.Context, act *Activation) (any, error) {
	if t.Whole() {
		return t.parts[0].prog.Eval(ctx, act)
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.prog.Eval(ctx, act)
		if err != nil {
			return nil, err
		}
		b.WriteString(Stringify(v))
		if b.Len() > MaxInterpolatedBytes {
			return nil, fmt.Errorf("rendering %q: %w: the string is over %d bytes", clip(t.Source), ErrTooLarge, MaxInterpolatedBytes)
		}
	}
	return b.String(), nil
}

// MaxInterpolatedBytes bounds a string with text around ${ } (each
// expression is bounded by MaxResultBytes; many of them by this).
const MaxInterpolatedBytes = 16 << 20

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// RenderString renders s, a string that may hold ${ }.
func (e *Env) RenderString(ctx context.Context, s string, act *Activation) (any, error) {
	if !HasInterpolation(s) {
		return s, nil
	}
	t, err := e.ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	return t.Render(ctx, act)
}

// Render interpolates every string inside v (maps and lists deeply; map
// keys are not interpolated) and returns a new value; v is not modified.
// Errors name the path of the failing value ("vars.max_memory: …").
func (e *Env) Render(ctx context.Context, v any, act *Activation) (any, error) {
	return e.render(ctx, v, act, "")
}

func (e *Env) render(ctx context.Context, v any, act *Activation, path string) (any, error) {
	switch x := v.(type) {
	case string:
		out, err := e.RenderString(ctx, x, act)
		if err != nil && path != "" {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return out, err
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic first error
		for _, k := range keys {
			r, err := e.render(ctx, x[k], act, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			r, err := e.render(ctx, el, act, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// RenderMap is Render for a map of values (params, vars, input).
func (e *Env) RenderMap(ctx context.Context, m map[string]any, act *Activation) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out, err := e.Render(ctx, m, act)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
