package expr

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"

	"github.com/soulstack/soulstack/internal/textutil"
)

// Shape is the static type of an object an expression reads: named fields
// with their CEL types. A closed shape makes any other field a validation
// error ("register.x has no field stdot (did you mean stdout?)"); an open
// one types the other fields dyn (custom facts, essence keys set only by a
// coven's file).
type Shape struct {
	// Name is how messages call the object ("register.check", "run").
	Name   string
	Fields map[string]*cel.Type
	Open   bool
	// Nested are fields that are objects with a shape of their own (the
	// output: of an applied destiny); their type is that shape's. A
	// nested shape is named after its parent: "register.res.output".
	Nested map[string]*Shape
	// Hint, when set, follows the message about a field the shape lacks
	// ("{field}" is replaced by that field's name).
	Hint string
}

// TypeScope declares the static types of the roots of one expression
// (SPEC §7 decision: expressions are type-checked at validation).
type TypeScope struct {
	// Input are the declared inputs of the scenario or destiny. Input is
	// open: an undeclared input is reported by the DSL on its own.
	Input *Shape
	// Essence are the keys of _default.yaml with their value types (open).
	Essence *Shape
	// Vars are the vars in scope: vars.yml, vars_files and the vars: of
	// the task and its enclosing blocks (the DSL passes a closed shape).
	Vars *Shape
	// Registers are the register shapes of the earlier tasks; a register
	// not listed is dyn (its existence is checked elsewhere).
	Registers map[string]*Shape
	// Self is register.self (the task's own result), nil outside
	// retry.until, failed_when and changed_when.
	Self *Shape
	// Item is the loop element type; nil outside a loop, where item and
	// loop_index are errors.
	Item *cel.Type
	// ItemShape, when set with Item, is item's closed shape (its fields
	// are known: {key, value} of a map loop, a literal list of maps).
	ItemShape *Shape
	// Delegated declares delegated_for: the expression belongs to a task
	// with delegate: (SPEC §9); elsewhere delegated_for is an error.
	Delegated bool
}

// NoDelegationMsg is the error of delegated_for read outside a task with
// delegate:.
const NoDelegationMsg = "delegated_for is only set on a task with delegate: inside a serial: block (it is the wave host the delegate acts for)"

// FactShape is the declared fact schema of soulprint.self (SPEC §7): the
// facts every soul reports, typed; custom facts are dyn.
func FactShape() *Shape {
	str := cel.StringType
	return &Shape{Name: "soulprint.self", Open: true, Fields: map[string]*cel.Type{
		"sid":      str,
		"hostname": str,
		"kernel":   str,
		"init":     str,
		"covens":   cel.ListType(str),
		"boot_id":  str,
		// The flat facts of SPEC §9's second set.
		"memory_mb":      cel.IntType,
		"cpus":           cel.IntType,
		"virtualization": str,
		"mounts":         cel.ListType(objType("soulprint.self.mount")),
		"os":             objType("soulprint.self.os"),
		"network":        objType("soulprint.self.network"),
		"cpu":            objType("soulprint.self.cpu"),
		"memory":         objType("soulprint.self.memory"),
	}}
}

// factSubShapes are the nested fact objects of FactShape. They are closed:
// a soul reports exactly these fields (soul.CollectFacts), and custom
// facts are top-level keys, so another field is a typo.
func factSubShapes() []*Shape {
	str := cel.StringType
	return []*Shape{
		{Name: "soulprint.self.os", Fields: map[string]*cel.Type{
			"family": str, "name": str, "version": str, "codename": str, "pretty_name": str, "arch": str, "distribution": str,
		}},
		{Name: "soulprint.self.network", Fields: map[string]*cel.Type{
			"primary_ip": str, "interfaces": cel.MapType(str, cel.ListType(str)),
		}},
		{Name: "soulprint.self.cpu", Fields: map[string]*cel.Type{"count": cel.IntType, "model": str}},
		{Name: "soulprint.self.memory", Fields: map[string]*cel.Type{"total_mb": cel.IntType}},
		{Name: "soulprint.self.mount", Fields: map[string]*cel.Type{
			"path": str, "device": str, "fstype": str, "options": cel.ListType(str),
		}},
	}
}

const typePrefix = "soulstack."

func objType(name string) *cel.Type { return cel.ObjectType(typePrefix + name) }

// TypeOfValue is the static type of a value decoded from YAML: scalars
// keep their type, lists and maps get a uniform element type or dyn. A
// string that is exactly one ${ } is dyn (its type is the expression's);
// text around ${ } is a string.
func TypeOfValue(v any) *cel.Type {
	switch x := v.(type) {
	case nil:
		return cel.DynType
	case bool:
		return cel.BoolType
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return cel.IntType
	case float32, float64:
		return cel.DoubleType
	case string:
		if HasInterpolation(x) {
			if t, err := parseTemplateNoCache(x); err != nil || t.Whole() {
				return cel.DynType
			}
		}
		return cel.StringType
	case []any:
		var elems []*cel.Type
		for _, e := range x {
			elems = append(elems, TypeOfValue(e))
		}
		return cel.ListType(joinTypes(elems))
	case map[string]any:
		var elems []*cel.Type
		for _, e := range x {
			elems = append(elems, TypeOfValue(e))
		}
		return cel.MapType(cel.StringType, joinTypes(elems))
	}
	return cel.DynType
}

// joinTypes is the common type of ts, or dyn when they differ.
func joinTypes(ts []*cel.Type) *cel.Type {
	if len(ts) == 0 {
		return cel.DynType
	}
	first := ts[0]
	for _, t := range ts[1:] {
		if !t.IsExactType(first) {
			return cel.DynType
		}
	}
	return first
}

// parseTemplateNoCache splits s without compiling (no Env at hand).
func parseTemplateNoCache(s string) (*Template, error) {
	return ForKind(KindScenario).ParseTemplate(s)
}

// TypeError is a static type problem of one expression: Col is 1-based
// within the expression source (0 when unknown).
type TypeError struct {
	Col int
	Msg string
}

func (e *TypeError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("col %d: %s", e.Col, e.Msg)
	}
	return e.Msg
}

// provider is the checker's type provider: the roots' object types with
// their declared fields.
type provider struct {
	types.Provider
	shapes map[string]*Shape // by CEL type name
	mu     sync.Mutex
	misses map[string]*Shape // field name → closed shape that lacks it
}

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.shapes[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if s, ok := p.shapes[name]; ok {
		return sortedFields(s), true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	s, ok := p.shapes[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	if t, ok := s.Fields[field]; ok {
		return &types.FieldType{Type: nullable(t)}, true
	}
	if s.Open {
		return &types.FieldType{Type: types.DynType}, true
	}
	p.mu.Lock()
	p.misses[field] = s
	p.mu.Unlock()
	return nil, false
}

// nullable lets a scalar field be compared with null (an optional input not
// given, a fact a host does not report): x != null must type-check.
func nullable(t *types.Type) *types.Type {
	switch t.Kind() {
	case types.BoolKind, types.IntKind, types.UintKind, types.DoubleKind, types.StringKind, types.BytesKind:
		return types.NewNullableType(t)
	}
	return t
}

func sortedFields(s *Shape) []string {
	out := make([]string, 0, len(s.Fields))
	for k := range s.Fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// typedBase is the environment the type checker extends per scope: the
// functions of SPEC §7, no variables.
func (e *Env) typedBase() (*cel.Env, error) {
	e.typedOnce.Do(func() {
		e.typed, e.typedErr = cel.NewEnv(
			ext.Strings(),
			cel.OptionalTypes(),
			cel.CrossTypeNumericComparisons(true),
			library(e),
		)
	})
	return e.typed, e.typedErr
}

// TypeCheck checks src against the static types of sc and returns its
// result type. It reports only what the untyped Compile cannot see (field
// a type cannot have, operators on the wrong types, item outside a loop);
// call it after Compile succeeded.
func (e *Env) TypeCheck(src string, sc *TypeScope) (*cel.Type, error) {
	base, err := e.typedBase()
	if err != nil {
		return nil, err
	}
	p := &provider{Provider: types.NewEmptyRegistry(), shapes: map[string]*Shape{}, misses: map[string]*Shape{}}
	var add func(s *Shape) *cel.Type
	add = func(s *Shape) *cel.Type {
		if s == nil {
			return cel.DynType
		}
		if len(s.Nested) > 0 {
			c := *s
			c.Fields = make(map[string]*cel.Type, len(s.Fields)+len(s.Nested))
			for k, t := range s.Fields {
				c.Fields[k] = t
			}
			for k, ns := range s.Nested {
				n := *ns
				n.Name = s.Name + "." + k
				if !strings.HasPrefix(s.Name, "register.") {
					n.Name = k + " of " + s.Name
				}
				c.Fields[k] = add(&n)
			}
			s = &c
		}
		p.shapes[typePrefix+s.Name] = s
		return objType(s.Name)
	}
	for _, s := range factSubShapes() {
		add(s)
	}
	self := add(FactShape())
	sp := add(&Shape{Name: "soulprint", Fields: map[string]*cel.Type{"self": self, "hosts": cel.ListType(cel.DynType)}})
	input := add(orOpen(sc.Input, "input"))
	essence := add(orOpen(sc.Essence, "essence"))
	vars := add(orOpen(sc.Vars, "vars"))
	regFields := map[string]*cel.Type{}
	for name, s := range sc.Registers {
		if s == nil {
			regFields[name] = cel.DynType
			continue
		}
		res := add(s)
		rs := &Shape{Name: "register." + name, Fields: map[string]*cel.Type{"hosts": cel.MapType(cel.StringType, res)}, Open: s.Open, Nested: s.Nested}
		for f, t := range s.Fields {
			rs.Fields[f] = t
		}
		regFields[name] = add(rs)
	}
	if sc.Self != nil {
		self := *sc.Self
		self.Name = "register.self"
		regFields["self"] = add(&self)
	}
	// register stays open: a register that does not exist is reported by
	// the DSL with its own message.
	register := add(&Shape{Name: "register", Fields: regFields, Open: true})
	opts := []cel.EnvOption{
		cel.CustomTypeProvider(p),
		cel.Variable("input", input),
		cel.Variable("essence", essence),
		cel.Variable("vars", vars),
		cel.Variable("register", register),
		cel.Variable("soulprint", sp),
	}
	if e.kind == KindScenario {
		opts = append(opts,
			cel.Variable("incarnation", add(&Shape{Name: "incarnation", Fields: map[string]*cel.Type{
				"name": cel.StringType, "host_count": cel.IntType, "covens": cel.ListType(cel.StringType),
				"status": cel.StringType, "members": cel.ListType(cel.DynType),
			}})),
			cel.Variable("state", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("run", add(&Shape{Name: "run", Fields: map[string]*cel.Type{
				"id": cel.StringType, "scenario": cel.StringType, "check_mode": cel.BoolType,
			}})),
		)
	}
	opts = append(opts, secretOptions(e.kind)...)
	if sc.Delegated && e.kind == KindScenario {
		fs := FactShape()
		fs.Name = "delegated_for.soulprint"
		opts = append(opts, cel.Variable("delegated_for", add(&Shape{Name: "delegated_for", Fields: map[string]*cel.Type{
			"sid": cel.StringType, "soulprint": add(fs),
		}})))
	}
	if sc.Item != nil {
		item := sc.Item
		if sc.ItemShape != nil {
			item = add(sc.ItemShape)
		}
		opts = append(opts, cel.Variable("item", item), cel.Variable("loop_index", cel.IntType))
	}
	opts = append(opts, objectOverloads(p.shapes)...)
	env, err := base.Extend(opts...)
	if err != nil {
		return nil, fmt.Errorf("building the type checker: %w", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		if err := p.typeError(iss, sc); err != nil {
			return nil, err
		}
		return cel.DynType, nil // only numeric cross-type equality: fine
	}
	return ast.OutputType(), nil
}

var numericArgRE = regexp.MustCompile(`^(wrapper\()?(int|uint|double)\)?$`)

// crossNumericEquality reports a checker issue about == or != between
// numbers of different types, which CEL's heterogeneous equality evaluates
// (6379 == 6379.0 is true at run time): not a type error.
func crossNumericEquality(msg string) bool {
	m := overloadRE.FindStringSubmatch(msg)
	if m == nil || (m[1] != operators.Equals && m[1] != operators.NotEquals) {
		return false
	}
	args := strings.Split(m[2], ", ")
	if len(args) != 2 {
		return false
	}
	return numericArgRE.MatchString(args[0]) && numericArgRE.MatchString(args[1])
}

func orOpen(s *Shape, name string) *Shape {
	if s == nil {
		return &Shape{Name: name, Open: true}
	}
	c := *s
	c.Name = name
	return &c
}

// objectOverloads lets the object types of the roots be used like the maps
// they are at run time: size(x), x.contains(k), k in x, x[k], and
// soulprint.where("…").
func objectOverloads(shapes map[string]*Shape) []cel.EnvOption {
	var sizeO, containsO, inO, indexO []cel.FunctionOpt
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := cel.ObjectType(n)
		id := strings.NewReplacer(".", "_", "-", "_").Replace(n)
		sizeO = append(sizeO, cel.Overload("size_"+id, []*cel.Type{t}, cel.IntType))
		containsO = append(containsO, cel.MemberOverload("contains_"+id, []*cel.Type{t, cel.DynType}, cel.BoolType))
		inO = append(inO, cel.Overload("in_"+id, []*cel.Type{cel.StringType, t}, cel.BoolType))
		indexO = append(indexO, cel.Overload("index_"+id, []*cel.Type{t, cel.StringType}, cel.DynType))
	}
	return []cel.EnvOption{
		cel.Function("size", sizeO...),
		cel.Function("contains", containsO...),
		cel.Function(operators.In, inO...),
		cel.Function(operators.Index, indexO...),
		cel.Function("where", cel.MemberOverload("soulprint_where", []*cel.Type{cel.ObjectType(typePrefix + "soulprint"), cel.StringType}, cel.ListType(cel.DynType))),
	}
}

var (
	undefinedFieldRE = regexp.MustCompile(`^undefined field '([^']*)'$`)
	undeclaredRefRE  = regexp.MustCompile(`^undeclared reference to '([^']*)'`)
	objTypeRE        = regexp.MustCompile(`soulstack\.([A-Za-z0-9_.]+)`)
	overloadRE       = regexp.MustCompile(`^found no matching overload for '([^']*)' applied to '\((.*)\)'`)
	// memberOverloadRE is the same for a receiver call: 'int.()'.
	memberOverloadRE = regexp.MustCompile(`^found no matching overload for '([^']*)' applied to '(.+)\.\((.*)\)'`)
)

// opName renders a CEL function or operator name for messages.
func opName(fn string) string {
	if op, ok := operators.FindReverse(fn); ok && op != "" {
		return "operator " + op
	}
	return fn + "()"
}

// typeError renders the first checker issue in the words of the DSL.
func (p *provider) typeError(iss *cel.Issues, sc *TypeScope) error {
	var errs []*cel.Error
	for _, ie := range iss.Errors() {
		if !crossNumericEquality(ie.Message) {
			errs = append(errs, ie)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	ie := errs[0]
	col := 0
	if loc := ie.Location; loc != nil && loc.Line() > 0 {
		col = loc.Column() + 1
	}
	msg := ie.Message
	if m := undefinedFieldRE.FindStringSubmatch(msg); m != nil {
		p.mu.Lock()
		s := p.misses[m[1]]
		p.mu.Unlock()
		if s != nil {
			msg = fmt.Sprintf("%s has no field %s%s", s.Name, m[1], didYouMean(m[1], sortedFields(s)))
			if s.Hint != "" {
				msg += " (" + strings.ReplaceAll(s.Hint, "{field}", m[1]) + ")"
			}
		}
	} else if m := undeclaredRefRE.FindStringSubmatch(msg); m != nil && m[1] == "delegated_for" && !sc.Delegated {
		msg = NoDelegationMsg
	} else if m := undeclaredRefRE.FindStringSubmatch(msg); m != nil && (m[1] == "item" || m[1] == "loop_index") && sc.Item == nil {
		msg = fmt.Sprintf("%s is only set inside a task with loop: (it is the current element; loop_index its position)", m[1])
	} else if m := memberOverloadRE.FindStringSubmatch(msg); m != nil {
		args := m[2]
		if m[3] != "" {
			args += ", " + m[3]
		}
		msg = fmt.Sprintf("%s cannot take (%s): the values have types it does not accept; convert one with int(), double() or string()", opName(m[1]), args)
	} else if m := overloadRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s cannot take (%s): the values have types it does not accept; convert one with int(), double() or string()", opName(m[1]), m[2])
	}
	return &TypeError{Col: col, Msg: cleanTypeNames(msg)}
}

func didYouMean(name string, cands []string) string { return textutil.Suggest(name, cands) }

// TypeName renders a checked type for messages ("string", "list(int)").
func TypeName(t *cel.Type) string { return cleanTypeNames(t.String()) }

var wrapperRE = regexp.MustCompile(`wrapper\(([a-z]+)\)`)

// cleanTypeNames drops the checker's internals from type names: the object
// type prefix and the nullable wrappers of scalar fields.
func cleanTypeNames(s string) string {
	s = wrapperRE.ReplaceAllString(s, "$1")
	return objTypeRE.ReplaceAllStringFunc(s, func(x string) string { return strings.TrimPrefix(x, typePrefix) })
}
