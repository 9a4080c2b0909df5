package dsl

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// validInputTypes lists the accepted input types in the order they are named
// in error messages.
var validInputTypes = []InputType{InputString, InputNumber, InputInteger, InputBoolean, InputList, InputMap}

// Get returns the spec named name, or nil.
func (in Inputs) Get(name string) *InputSpec {
	for _, s := range in {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Names lists the declared input names in file order.
func (in Inputs) Names() []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = s.Name
	}
	return out
}

// Secrets lists the names of inputs declared secret: true.
func (in Inputs) Secrets() []string {
	var out []string
	for _, s := range in {
		if s.Secret {
			out = append(out, s.Name)
		}
	}
	return out
}

// Resolve checks the given values against the declarations and returns the
// complete input: given values normalized to their declared type (integer →
// int64, number → float64, list → []any, map → map[string]any), defaults
// for the rest, and nil for optional inputs without a default. Unknown keys,
// missing required inputs and wrongly typed values are all reported in one
// *domain.Error with CodeInvalid.
func (in Inputs) Resolve(given map[string]any) (map[string]any, error) {
	var errs []error
	unknown := make([]string, 0)
	for k := range given {
		if in.Get(k) == nil {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, fmt.Errorf("unknown input %q%s", k, declaredHint(in)))
	}
	out := make(map[string]any, len(in))
	for _, s := range in {
		v, ok := given[s.Name]
		switch {
		case ok:
			nv, err := CoerceInput(s.Type, v)
			if err != nil && s.Secret {
				// The message reaches API answers and run results: it
				// names the kind of a secret value, never the value.
				errs = append(errs, fmt.Errorf("input %s: must be %s %s, got %s (value not shown: the input is secret)", s.Name, article(string(s.Type)), s.Type, kindOf(v)))
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("input %s: %w", s.Name, err))
				continue
			}
			out[s.Name] = nv
		case s.HasDefault:
			out[s.Name] = deepCopy(s.Default)
		case s.Required:
			errs = append(errs, fmt.Errorf("missing required input %s (%s)", s.Name, s.Type))
		default:
			out[s.Name] = nil
		}
	}
	if len(errs) > 0 {
		// Every reason is in the message: it is what API clients see.
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, &domain.Error{Code: domain.CodeInvalid, Message: "invalid input: " + strings.Join(msgs, "; ")}
	}
	return out, nil
}

func declaredHint(in Inputs) string {
	if len(in) == 0 {
		return " (no inputs are declared)"
	}
	return " (declared: " + strings.Join(in.Names(), ", ") + ")"
}

// CoerceInput checks that v has type t and returns it normalized: integer →
// int64 (an integral float such as a JSON number is accepted), number →
// float64, list → []any, map → map[string]any. A nil value is accepted for
// every type (an explicit null).
func CoerceInput(t InputType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case InputString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case InputBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case InputInteger:
		if f, ok := toFloat(v); ok && f == math.Trunc(f) && !math.IsInf(f, 0) {
			if i, ok := toInt(v); ok {
				return i, nil
			}
			return int64(f), nil
		}
	case InputNumber:
		// An integer stays an integer (SPEC §9: numbers keep their type).
		if i, ok := toInt(v); ok {
			return i, nil
		}
		if f, ok := toFloat(v); ok {
			// JSON (the API) has no integers: an integral value is one.
			if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return int64(f), nil
			}
			return f, nil
		}
	case InputList:
		if l, ok := toList(v); ok {
			return l, nil
		}
	case InputMap:
		if m, ok := toMap(v); ok {
			return m, nil
		}
	default:
		return nil, fmt.Errorf("unknown type %q", t)
	}
	return nil, fmt.Errorf("must be %s %s, got %s", article(string(t)), t, describe(v))
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an"
	}
	return "a"
}

// describe names the kind of a value for error messages: `string "abc"`.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case int, int64, int32, uint, uint64, uint32:
		return fmt.Sprintf("integer %v", x)
	case float64, float32, json.Number:
		return fmt.Sprintf("number %v", x)
	}
	if _, ok := toList(v); ok {
		return "a list"
	}
	if _, ok := toMap(v); ok {
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

// kindOf names the kind of v without its value (for secret inputs).
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, int32, uint, uint64, uint32:
		return "an integer"
	case float64, float32, json.Number:
		return "a number"
	}
	return describe(v) // "a list", "a map" or the Go type: no value
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x)
	case float32:
		return float64(x), !math.IsNaN(float64(x))
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	}
	return 0, false
}

func toList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func toMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, true
}

// deepCopy copies maps and lists so a default handed to one run cannot be
// mutated through another.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
