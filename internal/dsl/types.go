package dsl

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
)

// typeState is what the static type checker knows while a unit is parsed
// (SPEC §7 decision: expressions are type-checked at validation).
type typeState struct {
	input   *expr.Shape
	essence *expr.Shape
	// vars are vars.yml and the vars of the enclosing tasks.
	vars map[string]*cel.Type
	// regs are the result shapes of the registers defined so far.
	regs map[string]*expr.Shape
	// item is the loop element type of the task being parsed (nil: no
	// loop here); noItem says why item is not set when it is nil inside a
	// loop task (failed_when, changed_when, where).
	item   *cel.Type
	noItem string
	// itemShape is item's closed shape when its fields are known (see
	// loopItem), with item set.
	itemShape *expr.Shape
	// self is the task's own result shape, for register.self.
	self *expr.Shape
	// delegated is set while the keys of a task with delegate: are
	// checked: delegated_for is declared.
	delegated bool
}

// scope is the TypeScope of an expression of u evaluated with opts.
func (u *unit) scope(opts templateOpts) *expr.TypeScope {
	ts := &u.types
	sc := &expr.TypeScope{
		Input:   ts.input,
		Essence: ts.essence,
		// vars are closed: every var a task can read is declared in
		// vars.yml, vars_files, or the vars: of the task or an enclosing
		// block, so another name is a typo.
		Vars:      &expr.Shape{Fields: ts.vars},
		Registers: ts.regs,
		Item:      ts.item,
		ItemShape: ts.itemShape,
		Delegated: ts.delegated,
	}
	if opts.allowSelf {
		sc.Self = ts.self
	}
	return sc
}

// paramCelType is the CEL type of a declared module param or result field.
func paramCelType(t module.ParamType) *cel.Type {
	switch t {
	case module.TypeString:
		return cel.StringType
	case module.TypeInt:
		return cel.IntType
	case module.TypeBool:
		return cel.BoolType
	case module.TypeList:
		return cel.ListType(cel.DynType)
	case module.TypeStrList:
		return cel.ListType(cel.StringType)
	case module.TypeMap:
		return cel.MapType(cel.StringType, cel.DynType)
	}
	return cel.DynType // number (int or double at run time), any
}

// inputParamType maps an input: type onto the param type vocabulary.
func inputParamType(t InputType) module.ParamType {
	switch t {
	case InputString:
		return module.TypeString
	case InputInteger:
		return module.TypeInt
	case InputNumber:
		return module.TypeNumber
	case InputBoolean:
		return module.TypeBool
	case InputList:
		return module.TypeList
	case InputMap:
		return module.TypeMap
	}
	return module.TypeAny
}

// inputShape is the static shape of input.* from the declared inputs.
func inputShape(in Inputs) *expr.Shape {
	s := &expr.Shape{Name: "input", Fields: map[string]*cel.Type{}, Open: true}
	for _, spec := range in {
		s.Fields[spec.Name] = paramCelType(inputParamType(spec.Type))
	}
	return s
}

// essenceShape is the static shape of essence.*: the keys of
// _default.yaml with their value types, plus (as dyn) the keys only a
// coven's or an incarnation's file sets. It is closed: a key no essence
// file defines is a typo (essence.prot): an override given at creation
// only changes the value of a key the files define.
func essenceShape(svc *Service) *expr.Shape {
	s := &expr.Shape{Name: "essence", Fields: map[string]*cel.Type{},
		Hint: "a key is defined by essence/_default.yaml or a coven's or an incarnation's essence file; give {field} a default in essence/_default.yaml"}
	if svc == nil || svc.essenceOpen {
		s.Open = true
	}
	if svc == nil {
		return s
	}
	for name, m := range svc.Essences {
		if name == "_default" {
			continue
		}
		for k := range m {
			s.Fields[k] = cel.DynType
		}
	}
	for k, v := range svc.Essences["_default"] {
		s.Fields[k] = expr.TypeOfValue(v)
	}
	return s
}

// resultShape is the static shape of the result t registers: the common
// result fields plus the module's declared output (SPEC §5, §9). A module
// without a schema (a custom module) gives an open shape.
func resultShape(u *unit, t *Task) *expr.Shape {
	s := &expr.Shape{Name: "a result", Fields: map[string]*cel.Type{}}
	for k, f := range module.ResultFields {
		s.Fields[k] = paramCelType(f.Type)
	}
	s.Fields["attempts"] = cel.IntType
	switch {
	case t.Module != "":
		s.Name = "a " + t.Module + " result"
		schema, ok := u.moduleSchema(t.Module)
		if !ok || schema.Output == nil {
			s.Open = true
		}
		for k, f := range schema.Output {
			s.Fields[k] = paramCelType(f.Type)
		}
		// output: is a destiny's; a module task's is always empty.
		s.Nested = map[string]*expr.Shape{"output": {Fields: map[string]*cel.Type{},
			Hint: fmt.Sprintf("output is set only by apply: tasks; a module's own result fields are read directly, e.g. register.%s.{field}", t.Register)}}
	case t.Apply != nil:
		s.Name = "an apply: result"
		s.Fields["tasks"] = cel.ListType(cel.DynType)
		if d := u.destinyOf(t.Apply.Destiny); d != nil {
			// The destiny's declared output: keys, closed.
			s.Name = "a destiny " + d.Name + " result"
			out := &expr.Shape{Fields: map[string]*cel.Type{}}
			for k, v := range d.Output {
				out.Fields[k] = expr.TypeOfValue(v)
			}
			s.Nested = map[string]*expr.Shape{"output": out}
		}
	default:
		s.Name = "a block result"
		s.Fields["tasks"] = cel.ListType(cel.DynType)
	}
	return s
}

// destinyOf is the loaded destiny name of u's service, or nil.
func (u *unit) destinyOf(name string) *Destiny {
	if u.svc == nil {
		return nil
	}
	return u.svc.Destinies[name]
}

// fitsCel reports whether a value of checked type ct can have the declared
// param type t. Unknown types (dyn, null) fit anything: the module checks
// them again when it runs.
func fitsCel(t module.ParamType, ct *cel.Type) bool {
	if ct == nil {
		return true
	}
	switch ct.Kind() {
	case types.DynKind, types.AnyKind, types.NullTypeKind, types.ErrorKind, types.TypeParamKind, types.OpaqueKind:
		return true
	}
	k := ct.Kind()
	switch t {
	case module.TypeString:
		return k == types.StringKind
	case module.TypeInt, module.TypeNumber:
		return k == types.IntKind || k == types.UintKind || k == types.DoubleKind
	case module.TypeBool:
		return k == types.BoolKind
	case module.TypeList:
		return k == types.ListKind
	case module.TypeStrList:
		if k != types.ListKind {
			return false
		}
		ps := ct.Parameters()
		return len(ps) == 0 || ps[0].Kind() == types.StringKind || ps[0].Kind() == types.DynKind
	case module.TypeMap:
		return k == types.MapKind || k == types.StructKind
	}
	return true
}

// exprPos is the position of column col (1-based, in the expression) of an
// expression starting at byte off of the scalar n. Only single-line plain
// and quoted scalars without escapes map exactly; others give n's position.
func exprPos(file string, n *yaml.Node, off, col int) Pos {
	pos := posOf(file, n)
	if n == nil || col <= 0 || strings.Contains(n.Value, "\n") || pos.Col == 0 {
		return pos
	}
	switch n.Style {
	case 0:
		pos.Col += off + col - 1
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if strings.ContainsAny(n.Value, `\'"`) {
			return pos
		}
		pos.Col += 1 + off + col - 1
	}
	return pos
}

// typeCheck type-checks one compiled expression and reports a problem at
// its position; it returns the checked type (nil after a problem).
func (p *parser) typeCheck(u *unit, file string, n *yaml.Node, off int, key, src string, opts templateOpts) *cel.Type {
	sc := u.scope(opts)
	t, err := u.env.TypeCheck(src, sc)
	if err == nil {
		return t
	}
	msg, col := err.Error(), 0
	if te, ok := err.(*expr.TypeError); ok {
		msg, col = te.Msg, te.Col
		if sc.Item == nil && u.types.noItem != "" && (strings.HasPrefix(msg, "item is only set") || strings.HasPrefix(msg, "loop_index is only set")) {
			msg = u.types.noItem
		}
	}
	p.add(exprPos(file, n, off, col), key, fmt.Sprintf("%s: %s", key, msg))
	return nil
}

// templateTypes type-checks every ${ } of the scalar n and returns the
// type of the value it yields: the expression's for a whole "${ x }",
// string for text around ${ }, nil when unknown or after a problem.
func (p *parser) templateTypes(u *unit, file string, n *yaml.Node, key string, t *expr.Template, opts templateOpts) *cel.Type {
	var last *cel.Type
	ok := true
	for _, e := range t.Exprs() {
		ct := p.typeCheck(u, file, n, e.Offset, key, e.Program.Source, opts)
		if ct == nil {
			ok = false
		}
		last = ct
	}
	switch {
	case !ok:
		return nil
	case t.Whole():
		return last
	}
	return cel.StringType
}

// valueType is the static type of a YAML value whose strings may hold
// ${ }: whole expressions are typed by the checker (types gives them by
// node), the rest by TypeOfValue.
func valueType(v any, whole *cel.Type) *cel.Type {
	if whole != nil {
		return whole
	}
	return expr.TypeOfValue(v)
}

// loopItem is the element type of a loop and, when item is an object whose
// fields are known, its closed shape: {key, value} for a loop over a map,
// and the common keys of a literal list of maps that all have the same
// keys (loop: [{name: a, uid: 1}, {name: b, uid: 2}]).
func loopItem(v any, lt *cel.Type) (*cel.Type, *expr.Shape) {
	if l, ok := v.([]any); ok {
		return expr.TypeOfValue(l).Parameters()[0], literalItemShape(l)
	}
	if lt != nil && lt.Kind() == types.ListKind && len(lt.Parameters()) == 1 {
		return lt.Parameters()[0], nil
	}
	if lt != nil && (lt.Kind() == types.MapKind || lt.Kind() == types.StructKind) {
		value := cel.DynType
		if lt.Kind() == types.MapKind && len(lt.Parameters()) == 2 {
			value = lt.Parameters()[1]
		}
		return cel.MapType(cel.StringType, cel.DynType), &expr.Shape{Name: "item", Fields: map[string]*cel.Type{"key": cel.StringType, "value": value}}
	}
	return cel.DynType, nil
}

// literalItemShape is the shape of the elements of a literal loop list
// when every element is a map with the same keys, else nil.
func literalItemShape(l []any) *expr.Shape {
	var keys []string
	fields := map[string][]*cel.Type{}
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok || (i > 0 && len(m) != len(keys)) {
			return nil
		}
		for k, v := range m {
			if i == 0 {
				keys = append(keys, k)
			} else if _, seen := fields[k]; !seen {
				return nil
			}
			fields[k] = append(fields[k], expr.TypeOfValue(v))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	s := &expr.Shape{Name: "item", Fields: map[string]*cel.Type{}}
	for k, ts := range fields {
		s.Fields[k] = cel.DynType
		if t := ts[0]; allSame(ts) {
			s.Fields[k] = t
		}
	}
	return s
}

func allSame(ts []*cel.Type) bool {
	for _, t := range ts[1:] {
		if !t.IsExactType(ts[0]) {
			return false
		}
	}
	return true
}
