package dsl

import (
	"slices"
	"sort"
	"testing"
)

// TestEditorSchemasCoverParser: every key list the strict parser accepts
// (found in its source by acceptedKeys, so a list added later is found
// too) is the property set of an object in the editor schemas, so an
// editor completes every key the validator accepts.
func TestEditorSchemasCoverParser(t *testing.T) {
	var objects [][]string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok && x["additionalProperties"] == false {
				var keys []string
				for k := range props {
					keys = append(keys, k)
				}
				objects = append(objects, keys)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	for _, s := range EditorSchemas("") {
		walk(s.Schema)
	}
	lists := acceptedKeys(t)
	where := make([]string, 0, len(lists))
	for w := range lists {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		found := false
		for _, o := range objects {
			all := true
			for _, k := range lists[w] {
				if !slices.Contains(o, k) {
					all = false
					break
				}
			}
			if all {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("the keys of %s (%v) are no object of the editor schemas: describe them in editorschema.go", w, lists[w])
		}
	}
	for kind, keys := range ruleActionKeys {
		if !slices.ContainsFunc(objects, func(o []string) bool {
			return len(o) == len(keys) && !slices.ContainsFunc(keys, func(k string) bool { return !slices.Contains(o, k) })
		}) {
			t.Errorf("the keys of do.%s are no object of the editor schemas", kind)
		}
	}
}
