package module

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
)

// ValidateParams checks rendered params against s: unknown names, missing
// required params, the ExactlyOne and AtLeastOne groups and value types. A nil
// value counts as not given. It is the last line of defence on the soul; the
// DSL validator reports the same problems with file and line before a run.
func ValidateParams(s Schema, params map[string]any) error {
	var problems []string
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p, ok := s.Params[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown param %q (accepted: %s)", k, strings.Join(paramNames(s), ", ")))
			continue
		}
		if v := params[k]; v != nil && !HasType(p.Type, v) {
			problems = append(problems, fmt.Sprintf("param %q must be %s, got %s", k, p.Type, describe(v)))
		}
	}
	for _, k := range paramNames(s) {
		if s.Params[k].Required && params[k] == nil {
			problems = append(problems, fmt.Sprintf("missing required param %q", k))
		}
	}
	for _, g := range s.ExactlyOne {
		if n := countGiven(params, g); n != 1 {
			problems = append(problems, fmt.Sprintf("exactly one of %s must be given, got %d", strings.Join(g, ", "), n))
		}
	}
	for _, g := range s.AtLeastOne {
		if countGiven(params, g) == 0 {
			problems = append(problems, fmt.Sprintf("at least one of %s must be given", strings.Join(g, ", ")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid params: %s", strings.Join(problems, "; "))
	}
	return nil
}

// HasType reports whether v, a value decoded from YAML or JSON or produced by
// an expression, fits t. Integral floats count as integers because JSON has
// no integer type.
func HasType(t ParamType, v any) bool {
	switch t {
	case TypeAny, "":
		return true
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeBool:
		_, ok := v.(bool)
		return ok
	case TypeInt:
		switch x := v.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return true
		case float64:
			return x == math.Trunc(x) && !math.IsInf(x, 0)
		case float32:
			return float64(x) == math.Trunc(float64(x))
		}
		return false
	case TypeNumber:
		switch v.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			return true
		}
		return false
	case TypeList, TypeStrList:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return false
		}
		if t == TypeList {
			return true
		}
		for i := range rv.Len() {
			if _, ok := rv.Index(i).Interface().(string); !ok {
				return false
			}
		}
		return true
	case TypeMap:
		rv := reflect.ValueOf(v)
		return rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String
	}
	return false
}

func paramNames(s Schema) []string {
	out := make([]string, 0, len(s.Params))
	for k := range s.Params {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func countGiven(params map[string]any, group []string) int {
	n := 0
	for _, k := range group {
		if params[k] != nil {
			n++
		}
	}
	return n
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return fmt.Sprintf("the number %v", v)
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
