package core

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// args decodes one module call's params. The first problem is kept and
// returned by err, so an apply function reads all params and checks once.
// Types were already checked against the schema by the adapter; args still
// reports mismatches so a module is safe when called directly.
type args struct {
	p   map[string]any
	err error
}

func newArgs(p map[string]any) *args { return &args{p: p} }

func (a *args) failf(key, format string, v ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("param %q: %s", key, fmt.Sprintf(format, v...))
	}
}

// has reports whether key was given with a non-nil value.
func (a *args) has(key string) bool { return a.p[key] != nil }

// str returns a string param; other types are an error.
func (a *args) str(key string) string {
	v := a.p[key]
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		a.failf(key, "must be a string, got %T", v)
	}
	return s
}

// scalar returns a string, number or boolean param as a string.
func (a *args) scalar(key string) string {
	v := a.p[key]
	if v == nil {
		return ""
	}
	s, ok := scalarString(v)
	if !ok {
		a.failf(key, "must be a string or a number, got %T", v)
	}
	return s
}

func (a *args) boolean(key string, def bool) bool {
	v := a.p[key]
	if v == nil {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		a.failf(key, "must be true or false, got %T", v)
	}
	return b
}

// integer returns an integer param and whether it was given.
func (a *args) integer(key string) (int64, bool) {
	v := a.p[key]
	if v == nil {
		return 0, false
	}
	n, ok := toInt64(v)
	if !ok {
		a.failf(key, "must be an integer, got %v", v)
	}
	return n, true
}

func (a *args) strList(key string) []string {
	v := a.p[key]
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		a.failf(key, "must be a list of strings, got %T", v)
		return nil
	}
	out := make([]string, 0, rv.Len())
	for i := range rv.Len() {
		s, ok := rv.Index(i).Interface().(string)
		if !ok {
			a.failf(key, "item %d must be a string, got %T", i, rv.Index(i).Interface())
			return nil
		}
		out = append(out, s)
	}
	return out
}

// anyMap returns a map param with string keys.
func (a *args) anyMap(key string) map[string]any {
	v := a.p[key]
	if v == nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		return m
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		a.failf(key, "must be a map, got %T", v)
		return nil
	}
	out := make(map[string]any, rv.Len())
	for _, k := range rv.MapKeys() {
		out[k.String()] = rv.MapIndex(k).Interface()
	}
	return out
}

// strMap returns a map param whose values are scalars, as strings.
func (a *args) strMap(key string) map[string]string {
	m := a.anyMap(key)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := scalarString(v)
		if !ok {
			a.failf(key, "value of %q must be a string or a number, got %T", k, v)
			return nil
		}
		out[k] = s
	}
	return out
}

func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	}
	if n, ok := toInt64(v); ok {
		return strconv.FormatInt(n, 10), true
	}
	if u, ok := v.(uint64); ok {
		return strconv.FormatUint(u, 10), true
	}
	return "", false
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), x <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

// sortedKeys returns the keys of m in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
