package dsl

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// CheckEssenceOverrides checks essence overrides given at creation against
// the types of essence/_default.yaml's values (issue 35): an override of
// a different type ("x" where the default is 8080) would be accepted and
// then make every expression over that key fail at run time. Maps are
// checked key by key; a key _default.yaml does not set (or sets to null)
// takes any value. The error is CodeInvalid (422, soulctl exit 2) and
// names every mismatch.
func (s *Service) CheckEssenceOverrides(overrides map[string]any) error {
	if s == nil || len(overrides) == 0 {
		return nil
	}
	var problems []string
	checkEssence(s.Essences["_default"], overrides, "", &problems)
	if len(problems) == 0 {
		return nil
	}
	return domain.Errorf(domain.CodeInvalid, "essence overrides do not match essence/_default.yaml: %s", strings.Join(problems, "; "))
}

func checkEssence(def, over map[string]any, prefix string, problems *[]string) {
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, ok := def[k]
		if !ok || d == nil {
			continue
		}
		v := over[k]
		if dm, isMap := d.(map[string]any); isMap {
			if vm, ok := v.(map[string]any); ok {
				checkEssence(dm, vm, prefix+k+".", problems)
				continue
			}
		}
		if want := essenceKind(d); want != essenceKind(v) && !(want == "number" && essenceKind(v) == "integer") {
			*problems = append(*problems, fmt.Sprintf("%s%s must be %s %s like the default %s, got %s %s",
				prefix, k, article(want), want, preview(d), essenceKind(v), preview(v)))
		}
	}
}

// essenceKind names the type of a decoded YAML or JSON value; a number
// with no fraction is an integer (JSON decodes 8081 as a float).
func essenceKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32:
		return essenceKind(float64(x))
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}

func preview(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = fmt.Sprintf("%q", x)
	case map[string]any:
		s = "{…}"
	case []any:
		s = "[…]"
	default:
		s = fmt.Sprint(v)
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
