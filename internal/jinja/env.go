package jinja

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// MaxRange bounds range() as Jinja's sandbox does.
const MaxRange = 100_000

// environment builds a fresh gonja environment (nothing global is
// changed): Jinja's builtins, with Ansible's filters and tests, and
// bounded versions of those that grow their output (limit 0: unbounded).
func environment(limit int, newline string, mapKeys func(map[string]any) []string) *exec.Environment {
	keysOf := mapKeysOr(mapKeys)
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	fs := ansibleFilters(limit, newline)
	fs["items"] = filterItemsOrdered(keysOf)
	fs["dict2items"] = filterDict2ItemsOrdered(keysOf)
	for name, fn := range fs {
		if filters.Exists(name) {
			_ = filters.Replace(name, fn)
		} else {
			_ = filters.Register(name, fn)
		}
	}
	tests := exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests)
	for name, fn := range ansibleTests() {
		if tests.Exists(name) {
			_ = tests.Replace(name, fn)
		} else {
			_ = tests.Register(name, fn)
		}
	}
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(exec.NewContext(map[string]any{
		"range": rangeFunc,
		"none":  nil, "None": nil,
		"True": true, "False": false,
	}))
	structures := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{}).Update(builtins.ControlStructures)
	if inner, ok := structures.Get("macro"); ok {
		_ = structures.Replace("macro", macroParser(inner))
	}
	return &exec.Environment{
		Context:           ctx,
		Filters:           filters,
		Tests:             tests,
		ControlStructures: structures,
		Methods:           orderedMethods(keysOf),
	}
}

// rangeFunc is Jinja's range() as a list of at most MaxRange items
// (gonja's feeds a channel from a goroutine that a failing loop leaks).
func rangeFunc(_ *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	var start, stop, step = 0, 0, 1
	for _, a := range params.Args {
		if !a.IsInteger() {
			return nil, errors.New("range: want integers [start, ]stop[, step]")
		}
	}
	switch len(params.Args) {
	case 1:
		stop = params.Args[0].Integer()
	case 2:
		start, stop = params.Args[0].Integer(), params.Args[1].Integer()
	case 3:
		start, stop, step = params.Args[0].Integer(), params.Args[1].Integer(), params.Args[2].Integer()
	default:
		return nil, errors.New("range: want [start, ]stop[, step]")
	}
	if step == 0 {
		return nil, errors.New("range: step cannot be 0")
	}
	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		n = (start - stop - step - 1) / -step
	}
	if n > MaxRange {
		return nil, fmt.Errorf("range: %d items is over the limit of %d", n, MaxRange)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// errValue is a gonja error value for filter fn.
func errValue(fn string, format string, args ...any) *exec.Value {
	return exec.AsValue(fmt.Errorf(fn+": "+format, args...))
}

// bounded refuses, before it is built, a result of n bytes over limit.
func bounded(fn string, n, limit int) *exec.Value {
	if n < 0 || (limit > 0 && n > limit) {
		return errValue(fn, "the result would be %d bytes, over the %d MiB limit of a template", n, limit>>20)
	}
	return nil
}

// goValue converts a gonja value to plain Go data (maps, slices, scalars).
func goValue(v *exec.Value) any {
	if v == nil || v.IsNil() {
		return nil
	}
	switch {
	case v.IsBool():
		return v.Bool()
	case v.IsInteger():
		return v.Integer()
	case v.IsFloat():
		return v.Float()
	case v.IsString():
		return v.String()
	case v.IsDict():
		m := map[string]any{}
		pairs := v.Items()
		if d, ok := v.Interface().(*exec.Dict); ok {
			pairs = d.Pairs
		}
		for _, p := range pairs {
			m[p.Key.String()] = goValue(p.Value)
		}
		return m
	case v.IsList():
		out := make([]any, 0, v.Len())
		for i := 0; i < v.Len(); i++ {
			out = append(out, goValue(v.Index(i)))
		}
		return out
	}
	return v.Interface()
}

// pyString is str() of v as Python prints it (True, None, lists, dicts).
func pyString(v *exec.Value) string {
	if v.IsNil() {
		return "None"
	}
	return v.String()
}

func lines(s string) []string { return strings.Split(s, "\n") }
