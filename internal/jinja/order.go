package jinja

import (
	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// Map order (issue 37): Python's dicts keep insertion order, so a role's
// `{% for k, v in m.items() %}` writes the entries in the order its YAML
// wrote them. The data's maps are Go maps, with no order; Options.MapKeys
// gives it back (the keeper sends the YAML's key order with the data).
// keys(), values(), items(), the items filter and dict2items follow it;
// without MapKeys (or for a map the YAML did not write) keys are sorted,
// the same on every host and every run.

// mapKeysOr returns f, or sortedKeys when f is nil.
func mapKeysOr(f func(map[string]any) []string) func(map[string]any) []string {
	if f == nil {
		return sortedKeys
	}
	return f
}

// dictMethodNames are gonja's dict methods; keys, values and items are
// replaced, the others delegated.
var dictMethodNames = []string{"keys", "values", "items", "get", "pop", "setdefault", "update", "copy", "clear"}

// orderedMethods is builtins.Methods with the dict methods that list
// entries following keysOf.
func orderedMethods(keysOf func(map[string]any) []string) exec.Methods {
	ms := builtins.Methods
	dict := map[string]exec.Method[map[string]any]{}
	for _, name := range dictMethodNames {
		if m, ok := ms.Dict.Get(name); ok {
			dict[name] = m
		}
	}
	noArgs := func(f func(self map[string]any) any) exec.Method[map[string]any] {
		return func(self map[string]any, _ *exec.Value, args *exec.VarArgs) (any, error) {
			if err := args.Take(); err != nil {
				return nil, exec.ErrInvalidCall(err)
			}
			return f(self), nil
		}
	}
	dict["keys"] = noArgs(func(self map[string]any) any {
		return keysOf(self)
	})
	dict["values"] = noArgs(func(self map[string]any) any {
		keys := keysOf(self)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = self[k]
		}
		return out
	})
	dict["items"] = noArgs(func(self map[string]any) any {
		keys := keysOf(self)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = []any{k, self[k]}
		}
		return out
	})
	ms.Dict = exec.NewMethodSet(dict)
	return ms
}

// filterItemsOrdered is Jinja's items filter (gonja's walks the Go map at
// random) in keysOf's order.
func filterItemsOrdered(keysOf func(map[string]any) []string) exec.FilterFunction {
	return func(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
		if in.IsError() {
			return in
		}
		if err := p.Take(); err != nil {
			return exec.AsValue(exec.ErrInvalidCall(err))
		}
		if in.IsNil() {
			return exec.AsValue([]any{})
		}
		if in.IsList() {
			return in
		}
		m, ok := goValue(in).(map[string]any)
		if !ok {
			return errValue("items", "requires a mapping, got %s", pyString(in))
		}
		keys := keysOf(m)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = []any{k, m[k]}
		}
		return exec.AsValue(out)
	}
}

// filterDict2ItemsOrdered is Ansible's dict2items in keysOf's order.
func filterDict2ItemsOrdered(keysOf func(map[string]any) []string) exec.FilterFunction {
	return func(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
		if !in.IsDict() {
			return errValue("dict2items", "requires a dictionary, got %s", pyString(in))
		}
		kn := p.GetKeywordArgument("key_name", "key").String()
		vn := p.GetKeywordArgument("value_name", "value").String()
		m, _ := goValue(in).(map[string]any)
		out := make([]any, 0, len(m))
		for _, k := range keysOf(m) {
			out = append(out, map[string]any{kn: k, vn: m[k]})
		}
		return exec.AsValue(out)
	}
}
