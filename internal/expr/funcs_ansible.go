package expr

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/soulstack/soulstack/internal/textutil"
)

// ansibleFunctions are the functions that give Ansible's (Jinja's)
// meaning exactly, so that an imported role's expressions translate
// without approximation (SPEC §7): Python's split(), re.sub, the int
// filter, the version test and with_items' one-level flatten.
func ansibleFunctions() []cel.EnvOption {
	str, dyn := cel.StringType, cel.DynType
	return []cel.EnvOption{
		cel.Function("split",
			cel.Overload("split_string_global_ws", []*cel.Type{str}, cel.ListType(str), cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.NoSuchOverloadErr()
				}
				return nativeToValue(textutil.PySplit(string(s)))
			}))),
		cel.Function("regex_replace",
			cel.Overload("regex_replace_string_string_string", []*cel.Type{str, str, str}, str, cel.FunctionBinding(regexReplaceImpl))),
		cel.Function("int_or",
			cel.Overload("int_or_dyn_int", []*cel.Type{dyn, cel.IntType}, cel.IntType, cel.BinaryBinding(intOrImpl))),
		cel.Function("version_compare",
			cel.Overload("version_compare_string_string", []*cel.Type{str, str}, cel.IntType, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
				x, ok1 := a.(types.String)
				y, ok2 := b.(types.String)
				if !ok1 || !ok2 {
					return types.NoSuchOverloadErr()
				}
				c, err := textutil.CompareLooseVersions(string(x), string(y))
				if err != nil {
					return types.NewErr("version_compare: %v", err)
				}
				return types.Int(c)
			}))),
		cel.Function("flatten",
			cel.Overload("flatten_list", []*cel.Type{cel.ListType(dyn)}, cel.ListType(dyn), cel.UnaryBinding(flattenImpl))),
	}
}

// ansibleOverloads are the overloads above, charged by their output size.
var ansibleOverloads = []string{"split_string_global_ws", "regex_replace_string_string_string", "int_or_dyn_int",
	"version_compare_string_string", "flatten_list"}

// regexReplaceImpl is regex_replace(s, pattern, replacement): Python's
// re.sub over s (RE2 syntax; \1 and \g<name> in the replacement).
func regexReplaceImpl(args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NoSuchOverloadErr()
	}
	s, ok1 := args[0].(types.String)
	pat, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return types.NoSuchOverloadErr()
	}
	re, err := textutil.PyRegexp(string(pat), false, false)
	if err != nil {
		return types.NewErr("regex_replace: the pattern does not compile: %v", err)
	}
	// Expanded match by match, so that an output past the bound fails
	// before it is built.
	tmpl := textutil.PyReplacement(string(repl))
	in := string(s)
	var out []byte
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(in, -1) {
		out = append(out, in[last:m[0]]...)
		out = re.ExpandString(out, tmpl, in, m)
		last = m[1]
		if len(out) > MaxResultBytes {
			return tooLarge("regex_replace", len(out))
		}
	}
	out = append(out, in[last:]...)
	if len(out) > MaxResultBytes {
		return tooLarge("regex_replace", len(out))
	}
	return types.String(out)
}

// intOrImpl is int_or(x, d): Jinja's int filter. An int stays, a double
// is truncated, a bool is 0 or 1, a string is read as Python's int() and
// then float() read it; anything else (null, a list, a map, or
// text that is no number) gives d. A missing key stays an error, as an
// undefined variable is one in Ansible.
func intOrImpl(x, d ref.Val) ref.Val {
	switch v := x.(type) {
	case types.Int:
		return v
	case types.Uint:
		return types.Int(v)
	case types.Bool:
		if v {
			return types.Int(1)
		}
		return types.Int(0)
	case types.Double:
		n, ok, err := textutil.PyIntFloat(float64(v))
		if err != nil {
			return types.NewErr("int_or: %v", err)
		}
		if ok {
			return types.Int(n)
		}
	case types.String:
		n, ok, err := textutil.PyIntString(string(v))
		if err != nil {
			return types.NewErr("int_or: %v", err)
		}
		if ok {
			return types.Int(n)
		}
	}
	return d
}

// flattenImpl flattens a list one level, as with_items does.
func flattenImpl(v ref.Val) ref.Val {
	l, ok := v.(traits.Lister)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	var out []ref.Val
	it := l.Iterator()
	for it.HasNext() == types.True {
		e := it.Next()
		if inner, ok := e.(traits.Lister); ok {
			jt := inner.Iterator()
			for jt.HasNext() == types.True {
				out = append(out, jt.Next())
			}
			continue
		}
		out = append(out, e)
	}
	return types.DefaultTypeAdapter.NativeToValue(out)
}
