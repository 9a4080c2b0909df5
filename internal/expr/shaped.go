package expr

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// ShapedEnv compiles and evaluates expressions over a fixed set of roots
// whose static types are Shapes — a rule's if: over its event (SPEC §17).
// Expressions are type-checked against the shapes (a field a closed shape
// does not have is an error, with a suggestion) and evaluated over plain
// maps, with the same functions, cost limit and time bound as every other
// expression.
type ShapedEnv struct {
	roots  map[string]*Shape
	nested []*Shape
	names  []string
	base   *Env
	run    *cel.Env

	mu       sync.Mutex
	programs map[string]*ShapedProgram
}

// ShapedProgram is an expression compiled by a ShapedEnv.
type ShapedProgram struct {
	// Source is the CEL text as written.
	Source string
	// Type is the checked result type.
	Type string
	prg  cel.Program
	env  *ShapedEnv
}

// NewShapedEnv declares one root variable per entry of roots (the key is
// the variable name); nested are the shapes of object-typed fields, named
// as the fields' object types (see ObjectType).
func NewShapedEnv(roots map[string]*Shape, nested ...*Shape) (*ShapedEnv, error) {
	base, err := NewEnv(KindScenario)
	if err != nil {
		return nil, err
	}
	se := &ShapedEnv{roots: roots, nested: nested, base: base, programs: map[string]*ShapedProgram{}}
	opts := []cel.EnvOption{
		ext.Strings(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.CustomTypeAdapter(orderedAdapter{}),
		library(base),
	}
	for name := range roots {
		se.names = append(se.names, name)
		opts = append(opts, cel.Variable(name, cel.MapType(cel.StringType, cel.DynType)))
	}
	sort.Strings(se.names)
	if se.run, err = cel.NewEnv(opts...); err != nil {
		return nil, fmt.Errorf("building the expression environment: %w", err)
	}
	return se, nil
}

// ObjectType is the CEL type of a field holding an object of shape name
// (declare the shape in NewShapedEnv's nested).
func ObjectType(name string) *cel.Type { return objType(name) }

// Roots lists the root names, sorted.
func (se *ShapedEnv) Roots() []string { return se.names }

// Compile parses, type-checks and plans src; the error names the column
// inside src and what is wrong. Programs are cached by source.
func (se *ShapedEnv) Compile(src string) (*ShapedProgram, error) {
	se.mu.Lock()
	if p, ok := se.programs[src]; ok {
		se.mu.Unlock()
		return p, nil
	}
	se.mu.Unlock()
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	t, err := se.typeCheck(src)
	if err != nil {
		return nil, err
	}
	ast, iss := se.run.Compile(src)
	if iss.Err() != nil {
		return nil, issuesError(iss, se.names)
	}
	prg, err := se.run.Program(ast,
		cel.CostLimit(se.base.costLimit),
		cel.InterruptCheckFrequency(64),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	p := &ShapedProgram{Source: src, Type: TypeName(t), prg: prg, env: se}
	se.mu.Lock()
	if len(se.programs) < maxCached {
		se.programs[src] = p
	}
	se.mu.Unlock()
	return p, nil
}

// CompileBool is Compile for predicates: the result must be a boolean.
func (se *ShapedEnv) CompileBool(src string) (*ShapedProgram, error) {
	p, err := se.Compile(src)
	if err != nil {
		return nil, err
	}
	if p.Type != "bool" && p.Type != "dyn" {
		return nil, fmt.Errorf("must be a boolean predicate, but it yields %s", p.Type)
	}
	return p, nil
}

// typeCheck checks src against the declared shapes.
func (se *ShapedEnv) typeCheck(src string) (*cel.Type, error) {
	base, err := se.base.typedBase()
	if err != nil {
		return nil, err
	}
	p := &provider{Provider: types.NewEmptyRegistry(), shapes: map[string]*Shape{}, misses: map[string]*Shape{}}
	for _, s := range se.nested {
		p.shapes[typePrefix+s.Name] = s
	}
	opts := []cel.EnvOption{cel.CustomTypeProvider(p)}
	for _, name := range se.names {
		s := se.roots[name]
		p.shapes[typePrefix+s.Name] = s
		opts = append(opts, cel.Variable(name, objType(s.Name)))
	}
	opts = append(opts, objectOverloads(p.shapes)...)
	env, err := base.Extend(opts...)
	if err != nil {
		return nil, fmt.Errorf("building the type checker: %w", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		if m := undeclaredRefRE.FindStringSubmatch(iss.Errors()[0].Message); m != nil {
			return nil, issuesError(iss, se.names)
		}
		if err := p.typeError(iss, &TypeScope{}); err != nil {
			return nil, err
		}
		return cel.DynType, nil
	}
	return ast.OutputType(), nil
}

// Eval evaluates the program with vars as its roots and returns a plain
// Go value.
func (p *ShapedProgram) Eval(ctx context.Context, vars map[string]any) (any, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, p.env.base.maxEvalTime, ErrEvalTime)
	defer cancel()
	in := make(map[string]any, len(p.env.names))
	for _, n := range p.env.names {
		v, ok := vars[n]
		if !ok || v == nil {
			v = map[string]any{}
		}
		in[n] = v
	}
	out, _, err := p.prg.ContextEval(ctx, in)
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrEvalTime) {
			return nil, fmt.Errorf("evaluating %q: %w", p.Source, ErrEvalTime)
		}
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return nil, fmt.Errorf("evaluating %q: %w", p.Source, ErrCostLimit)
		}
		return nil, fmt.Errorf("evaluating %q: %w", p.Source, err)
	}
	v, err := toNative(out)
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", p.Source, err)
	}
	if n := SizeOf(v, MaxResultBytes); n > MaxResultBytes {
		return nil, fmt.Errorf("evaluating %q: %w", p.Source, ErrTooLarge)
	}
	return v, nil
}

// EvalBool evaluates a predicate.
func (p *ShapedProgram) EvalBool(ctx context.Context, vars map[string]any) (bool, error) {
	v, err := p.Eval(ctx, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: must yield a boolean, got %T", p.Source, v)
	}
	return b, nil
}

// ShapedTemplate is a string that may hold ${ } interpolations over a
// ShapedEnv's roots: exactly one ${ expr } yields the typed value, text
// around yields a string (as everywhere, SPEC §7).
type ShapedTemplate struct {
	Source string
	parts  []shapedPart
}

type shapedPart struct {
	lit  string
	prog *ShapedProgram
}

// Whole reports whether the template is exactly one expression.
func (t *ShapedTemplate) Whole() bool { return len(t.parts) == 1 && t.parts[0].prog != nil }

// Type is the checked type of a whole template, else "string".
func (t *ShapedTemplate) Type() string {
	if t.Whole() {
		return t.parts[0].prog.Type
	}
	return "string"
}

// ParseTemplate splits s into literal text and compiled expressions.
func (se *ShapedEnv) ParseTemplate(s string) (*ShapedTemplate, error) {
	t := &ShapedTemplate{Source: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, shapedPart{lit: lit.String()})
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
			src := strings.TrimSpace(s[i+2 : end])
			if src == "" {
				return nil, fmt.Errorf("${ at offset %d: empty expression", i)
			}
			p, err := se.Compile(src)
			if err != nil {
				return nil, fmt.Errorf("${ %s }: %w", src, err)
			}
			flush()
			t.parts = append(t.parts, shapedPart{prog: p})
			i = end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return t, nil
}

// Render evaluates the template with vars as its roots.
func (t *ShapedTemplate) Render(ctx context.Context, vars map[string]any) (any, error) {
	if t.Whole() {
		return t.parts[0].prog.Eval(ctx, vars)
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.prog.Eval(ctx, vars)
		if err != nil {
			return nil, err
		}
		b.WriteString(Stringify(v))
		if b.Len() > MaxInterpolatedBytes {
			return nil, fmt.Errorf("rendering %q: %w", t.Source, ErrTooLarge)
		}
	}
	return b.String(), nil
}
