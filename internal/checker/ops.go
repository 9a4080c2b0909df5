package checker

import (
	"fmt"
	"reflect"
	"strings"
)

// compare applies op to a filter result and an expected value, both
// JSON-shaped. It is strictly typed: == and != compare JSON values (values
// of different types are unequal); ordering ops need two numbers; in needs
// an array (membership) or two strings (substring); contains needs an array
// or two strings. Anything else is an error, never a silent false.
func compare(op Op, got, want any) (bool, error) {
	switch op {
	case OpEq:
		return reflect.DeepEqual(got, want), nil
	case OpNe:
		return !reflect.DeepEqual(got, want), nil
	case OpGt, OpGe, OpLt, OpLe:
		a, okA := got.(float64)
		b, okB := want.(float64)
		if !okA || !okB {
			return false, fmt.Errorf("op %s needs two numbers, got %s %s %s", op, typeName(got), op, typeName(want))
		}
		switch op {
		case OpGt:
			return a > b, nil
		case OpGe:
			return a >= b, nil
		case OpLt:
			return a < b, nil
		default:
			return a <= b, nil
		}
	case OpIn:
		return member(op, want, got)
	case OpContains:
		return member(op, got, want)
	}
	return false, fmt.Errorf("unknown op %q", op)
}

// member reports whether needle is an element of haystack (an array) or a
// substring of it (two strings).
func member(op Op, haystack, needle any) (bool, error) {
	switch h := haystack.(type) {
	case []any:
		for _, e := range h {
			if reflect.DeepEqual(e, needle) {
				return true, nil
			}
		}
		return false, nil
	case string:
		if n, ok := needle.(string); ok {
			return strings.Contains(h, n), nil
		}
	}
	return false, fmt.Errorf("op %s needs an array (or two strings), got %s and %s", op, typeName(haystack), typeName(needle))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
