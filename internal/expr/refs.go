package expr

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"github.com/soulstack/soulstack/internal/textutil"
)

// Roots are the top-level names an expression may use (KindScenario).
var Roots = []string{"input", "essence", "vars", "item", "loop_index", "register", "soulprint", "incarnation", "state", "run", "delegated_for"}

// Refs is what an expression reads, found statically; dsl validation uses
// it to check register names against earlier tasks.
type Refs struct {
	// Roots are the root names used, sorted.
	Roots []string
	// Registers are the names read as register.<name> or
	// register["<name>"] (not "self"), sorted.
	Registers []string
	// RegisterSelf is set when register.self is read.
	RegisterSelf bool
	// RegisterDynamic is set when register is indexed by a computed key or
	// used whole, so Registers may be incomplete.
	RegisterDynamic bool
	// Soulprint are the soulprint members used: "self", "hosts", "where",
	// or another (invalid) field name, sorted.
	Soulprint []string
	// Predicates are the constant string arguments of where(…) calls.
	Predicates []string
	// Inputs are the names read as input.<name> or input["<name>"],
	// sorted (dsl validation checks them against the declared inputs).
	Inputs []string
}

func (r Refs) merge(o Refs) Refs {
	return Refs{
		Roots:           union(r.Roots, o.Roots),
		Registers:       union(r.Registers, o.Registers),
		RegisterSelf:    r.RegisterSelf || o.RegisterSelf,
		RegisterDynamic: r.RegisterDynamic || o.RegisterDynamic,
		Soulprint:       union(r.Soulprint, o.Soulprint),
		Predicates:      union(r.Predicates, o.Predicates),
		Inputs:          union(r.Inputs, o.Inputs),
	}
}

func union(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := slices.Concat(a, b)
	sort.Strings(out)
	return slices.Compact(out)
}

func add(set *[]string, s string) {
	if !slices.Contains(*set, s) {
		*set = append(*set, s)
	}
}

func identName(e ast.Expr) string {
	if e.Kind() == ast.IdentKind {
		return e.AsIdent()
	}
	return ""
}

func literalString(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// collectRefs walks a parsed (macro-expanded) expression.
func collectRefs(a *ast.AST) Refs {
	var r Refs
	// handled marks ident expressions consumed as the operand of a select,
	// index or where() call, to tell a bare use of register/soulprint.
	handled := map[int64]bool{}
	visit := func(e ast.Expr) {
		switch e.Kind() {
		case ast.SelectKind:
			sel := e.AsSelect()
			switch identName(sel.Operand()) {
			case "register":
				handled[sel.Operand().ID()] = true
				r.addRegister(sel.FieldName())
			case "soulprint":
				handled[sel.Operand().ID()] = true
				add(&r.Soulprint, sel.FieldName())
			case "input":
				add(&r.Inputs, sel.FieldName())
			}
		case ast.CallKind:
			call := e.AsCall()
			args := call.Args()
			switch {
			case (call.FunctionName() == "_[_]" || call.FunctionName() == "_[?_]" || call.FunctionName() == "_?._") && len(args) == 2:
				root := identName(args[0])
				if root == "input" {
					if key, ok := literalString(args[1]); ok {
						add(&r.Inputs, key)
					}
					return
				}
				if root != "register" && root != "soulprint" {
					return
				}
				handled[args[0].ID()] = true
				key, ok := literalString(args[1])
				switch {
				case !ok && root == "register":
					r.RegisterDynamic = true
				case !ok:
					add(&r.Soulprint, "<computed>")
				case root == "register":
					r.addRegister(key)
				default:
					add(&r.Soulprint, key)
				}
			case call.FunctionName() == "where" && call.IsMemberFunction():
				if identName(call.Target()) == "soulprint" {
					handled[call.Target().ID()] = true
					add(&r.Soulprint, "where")
				}
				if len(args) == 1 {
					if s, ok := literalString(args[0]); ok {
						add(&r.Predicates, s)
					}
				}
			}
		}
	}
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(visit))
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		name := identName(e)
		if !slices.Contains(Roots, name) {
			return
		}
		add(&r.Roots, name)
		if handled[e.ID()] {
			return
		}
		switch name {
		case "register":
			r.RegisterDynamic = true
		case "soulprint":
			add(&r.Soulprint, "<whole>")
		}
	}))
	sort.Strings(r.Roots)
	sort.Strings(r.Registers)
	sort.Strings(r.Soulprint)
	sort.Strings(r.Predicates)
	sort.Strings(r.Inputs)
	return r
}

func (r *Refs) addRegister(name string) {
	if name == "self" {
		r.RegisterSelf = true
		return
	}
	add(&r.Registers, name)
}

// checkIsolation rejects, with a message saying what to do, references the
// environment's kind does not allow.
func (e *Env) checkIsolation(r Refs) error {
	var errs []error
	if e.kind == KindDestiny {
		if slices.Contains(r.Roots, "delegated_for") {
			errs = append(errs, errors.New("delegated_for is not visible inside a destiny: it is set on a scenario task with delegate:; pass what the destiny needs through apply.input"))
		}
		for _, root := range []string{"incarnation", "state", "run"} {
			if slices.Contains(r.Roots, root) {
				errs = append(errs, fmt.Errorf("%s is not visible inside a destiny: pass what the destiny needs through apply.input", root))
			}
		}
	}
	for _, f := range r.Soulprint {
		switch {
		case f == "self":
		case e.kind == KindDestiny && (f == "hosts" || f == "where"):
			what := "soulprint.hosts"
			if f == "where" {
				what = `soulprint.where("…")`
			}
			errs = append(errs, fmt.Errorf("%s is not visible inside a destiny: only soulprint.self is; pass topology through apply.input", what))
		case e.kind == KindDestiny:
			errs = append(errs, errors.New("only soulprint.self is visible inside a destiny"))
		case f == "hosts" || f == "where":
		case f == "<whole>" || f == "<computed>":
			errs = append(errs, errors.New(`soulprint must be used as soulprint.self, soulprint.hosts or soulprint.where("…")`))
		default:
			errs = append(errs, fmt.Errorf(`soulprint has no field %q: use soulprint.self.%s for the current host's facts (soulprint has self, hosts and where("…"))`, f, f))
		}
	}
	for _, p := range r.Predicates {
		if _, err := e.predicate(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closest returns " (did you mean x?)" for the candidate closest to word,
// or "".
func closest(word string, candidates []string) string { return textutil.Suggest(word, candidates) }
