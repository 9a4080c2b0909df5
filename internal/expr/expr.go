// Package expr is the expression language of service repositories: CEL
// predicates (when:, where:, failed_when:, changed_when:, retry.until) and
// ${ } interpolation of strings, with the roots and functions of SPEC §7.
//
// Expressions are compiled once per Env (the cache is keyed by source) and
// evaluated many times against an Activation the engine or the task executor
// fills for one host. Evaluation is bounded by a cost limit.
//
// Two kinds of environment exist. KindScenario sees every root. KindDestiny
// is the isolated view of a destiny: no incarnation, state or run, and of
// soulprint only soulprint.self; register holds only the destiny's own
// tasks (the executor fills it).
package expr

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// Kind selects what an expression may see.
type Kind int

// Environment kinds.
const (
	KindScenario Kind = iota
	KindDestiny
)

func (k Kind) String() string {
	if k == KindDestiny {
		return "destiny"
	}
	return "scenario"
}

// DefaultCostLimit bounds one evaluation (CEL's runtime cost units, roughly
// one per operation and per list element visited).
const DefaultCostLimit uint64 = 1_000_000

// ErrCostLimit is wrapped by evaluation errors of expressions that exceeded
// the cost limit.
var ErrCostLimit = errors.New("expression exceeded its evaluation cost limit")

// DefaultMaxEvalTime bounds the time of one evaluation. The cost limit
// alone does not bound it: cel-go's cost tracker makes a comprehension
// quadratic in its list's length (200,000 elements: tens of seconds within
// the limit).
const DefaultMaxEvalTime = 5 * time.Second

// ErrEvalTime is wrapped by evaluation errors of expressions that ran
// longer than the Env's time bound.
var ErrEvalTime = errors.New("expression evaluation took too long")

// Env compiles and caches expressions of one Kind. It is safe for
// concurrent use.
type Env struct {
	kind        Kind
	costLimit   uint64
	maxEvalTime time.Duration
	cel         *cel.Env
	programs    sync.Map // source → *compiled
	templates   sync.Map // source → *templateEntry
	predCache   sync.Map // where("…") predicate source → compiled program
	cached      atomic.Int64
	// predicates compiles the string arguments of where("…") with self.
	predicates *cel.Env
	// typed is the base of the static type checker (TypeCheck).
	typedOnce sync.Once
	typed     *cel.Env
	typedErr  error
}

type compiled struct {
	p   *Program
	err error
}

// Option configures NewEnv.
type Option func(*Env)

// WithCostLimit sets the per-evaluation cost limit (DefaultCostLimit when
// not given).
func WithCostLimit(n uint64) Option { return func(e *Env) { e.costLimit = n } }

// WithMaxEvalTime sets the per-evaluation time bound (DefaultMaxEvalTime
// when not given).
func WithMaxEvalTime(d time.Duration) Option { return func(e *Env) { e.maxEvalTime = d } }

// NewEnv builds an environment of the given kind.
func NewEnv(kind Kind, opts ...Option) (*Env, error) {
	e := &Env{kind: kind, costLimit: DefaultCostLimit, maxEvalTime: DefaultMaxEvalTime}
	for _, o := range opts {
		o(e)
	}
	mapType := cel.MapType(cel.StringType, cel.DynType)
	decls := []cel.EnvOption{
		cel.Variable("input", mapType),
		cel.Variable("essence", mapType),
		cel.Variable("vars", mapType),
		cel.Variable("item", cel.DynType),
		cel.Variable("loop_index", cel.IntType),
		cel.Variable("register", mapType),
		cel.Variable("soulprint", mapType),
	}
	if kind == KindScenario {
		decls = append(decls,
			cel.Variable("incarnation", mapType),
			cel.Variable("state", mapType),
			cel.Variable("run", mapType),
			cel.Variable("delegated_for", mapType),
		)
	}
	base := []cel.EnvOption{
		ext.Strings(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.CustomTypeAdapter(orderedAdapter{}),
		library(e),
	}
	decls = append(decls, secretOptions(kind)...)
	env, err := cel.NewEnv(append(base, decls...)...)
	if err != nil {
		return nil, fmt.Errorf("building %s expression environment: %w", kind, err)
	}
	e.cel = env
	pe, err := cel.NewEnv(append(base, cel.Variable("self", cel.DynType))...)
	if err != nil {
		return nil, fmt.Errorf("building predicate environment: %w", err)
	}
	e.predicates = pe
	return e, nil
}

var (
	sharedOnce [2]sync.Once
	shared     [2]*Env
)

// ForKind returns the process-wide Env of kind k with the default cost
// limit; validation and evaluation share it so programs compile once.
func ForKind(k Kind) *Env {
	sharedOnce[k].Do(func() {
		e, err := NewEnv(k)
		if err != nil {
			panic(err) // the declarations are static: failing here is a programming error
		}
		shared[k] = e
	})
	return shared[k]
}

// Roots lists the root names expressions of e's kind may use.
func (e *Env) Roots() []string {
	if e.kind == KindDestiny {
		return []string{"input", "essence", "vars", "item", "loop_index", "register", "soulprint"}
	}
	return Roots
}

// Kind returns the kind of e.
func (e *Env) Kind() Kind { return e.kind }

// Program is a compiled expression.
type Program struct {
	// Source is the CEL text as written.
	Source string
	// Refs are the roots and registers the expression reads.
	Refs Refs
	// Bool reports whether the checked result type is bool (or dyn, which
	// is checked at evaluation).
	Bool bool
	// Type is the checked result type ("bool", "string", "dyn", …).
	Type string

	env *Env
	prg cel.Program
}

// Compile parses, checks and plans src, or returns the cached result. The
// error names the column inside src and what is wrong.
func (e *Env) Compile(src string) (*Program, error) {
	if c, ok := e.programs.Load(src); ok {
		return c.(*compiled).p, c.(*compiled).err
	}
	p, err := e.compile(src)
	if e.cached.Add(1) > maxCached {
		return p, err // a full cache stops growing; programs still work
	}
	c, _ := e.programs.LoadOrStore(src, &compiled{p: p, err: err})
	return c.(*compiled).p, c.(*compiled).err
}

// maxCached bounds the number of cached programs and templates per Env, so
// a long-running Keeper that sees many repository versions cannot grow the
// caches without limit.
const maxCached = 100_000

// CompileBool is Compile for predicates: the result type must be bool (or
// dyn, then checked at evaluation).
func (e *Env) CompileBool(src string) (*Program, error) {
	p, err := e.Compile(src)
	if err != nil {
		return nil, err
	}
	if !p.Bool {
		return nil, fmt.Errorf("must be a boolean predicate, but %q yields %s", src, p.Type)
	}
	return p, nil
}

func (e *Env) compile(src string) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	parsed, iss := e.cel.Parse(src)
	if iss.Err() != nil {
		return nil, issuesError(iss, e.Roots())
	}
	refs := collectRefs(parsed.NativeRep())
	if err := e.checkIsolation(refs); err != nil {
		return nil, err
	}
	checked, iss := e.cel.Check(parsed)
	if iss.Err() != nil {
		return nil, issuesError(iss, e.Roots())
	}
	prg, err := e.cel.Program(checked,
		cel.CostLimit(e.costLimit),
		cel.InterruptCheckFrequency(64),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	out := checked.OutputType()
	return &Program{
		Source: src,
		Refs:   refs,
		Bool:   out.IsExactType(types.BoolType) || out.IsExactType(types.DynType),
		Type:   out.String(),
		env:    e,
		prg:    prg,
	}, nil
}

var (
	expectingRE  = regexp.MustCompile(` expecting (\{[^}]*\}|'[^']*'|[A-Z_]+)`)
	undeclaredRE = regexp.MustCompile(`^undeclared reference to '([^']*)' \(in container ''\)$`)
)

// issuesError renders CEL issues compactly: "col 5: undeclared reference to
// 'foo'; …" (the caller adds file and line).
func issuesError(iss *cel.Issues, roots []string) error {
	var parts []string
	for _, ie := range iss.Errors() {
		msg := expectingRE.ReplaceAllString(ie.Message, "")
		if m := undeclaredRE.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown name %s (roots are %s)%s", m[1], strings.Join(roots, ", "), closest(m[1], roots))
		}
		if loc := ie.Location; loc != nil && loc.Line() > 0 {
			if loc.Line() > 1 {
				msg = fmt.Sprintf("line %d col %d: %s", loc.Line(), loc.Column()+1, msg)
			} else {
				msg = fmt.Sprintf("col %d: %s", loc.Column()+1, msg)
			}
		}
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		return errors.New(iss.String())
	}
	return errors.New(strings.Join(parts, "; "))
}

// Eval evaluates the program for one activation and returns a plain Go
// value (map[string]any, []any, string, int64, uint64, float64, bool, nil).
func (p *Program) Eval(ctx context.Context, act *Activation) (any, error) {
	out, err := p.eval(ctx, act)
	if err != nil {
		return nil, err
	}
	v, err := toNative(out)
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", p.Source, err)
	}
	if n := SizeOf(v, MaxResultBytes); n > MaxResultBytes {
		return nil, fmt.Errorf("evaluating %q: %w: its value is over %d bytes; pass large data by file (core.file.*) instead", p.Source, ErrTooLarge, MaxResultBytes)
	}
	return v, nil
}

// EvalBool evaluates a predicate; a non-boolean result is an error.
func (p *Program) EvalBool(ctx context.Context, act *Activation) (bool, error) {
	out, err := p.eval(ctx, act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: must yield a boolean, got %s", p.Source, out.Type().TypeName())
	}
	return bool(b), nil
}

// eval runs the program within the Env's time bound (CEL checks for the
// interrupt every 64 comprehension iterations).
func (p *Program) eval(ctx context.Context, act *Activation) (ref.Val, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, p.env.maxEvalTime, ErrEvalTime)
	defer cancel()
	out, _, err := p.prg.ContextEval(ctx, act.resolver())
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrEvalTime) {
			return nil, fmt.Errorf("evaluating %q: %w (over %s); simplify the expression or the data it walks (a comprehension over a very large list)", p.Source, ErrEvalTime, p.env.maxEvalTime)
		}
		if act != nil && (act.Sensitive || len(act.Secrets) > 0) {
			err = redactError(err)
		}
		return nil, p.evalError(err)
	}
	return out, nil
}

func (p *Program) evalError(err error) error {
	if strings.Contains(err.Error(), "cost limit exceeded") {
		return fmt.Errorf("evaluating %q: %w (limit %d); simplify the expression or the data it walks", p.Source, ErrCostLimit, p.env.costLimit)
	}
	if errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), ErrTooLarge.Error()) {
		return fmt.Errorf("evaluating %q: %w", p.Source, err)
	}
	if strings.Contains(err.Error(), "no such overload") {
		// CEL's own words name no types: say what usually causes it.
		return fmt.Errorf("evaluating %q: %w: an operator or function got values of types it does not take (such as an int compared with a string, or an int with a double); convert with int(), double() or string()", p.Source, err)
	}
	return fmt.Errorf("evaluating %q: %w", p.Source, err)
}
