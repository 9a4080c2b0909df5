package dsl

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// checkStateType reports a state_changes value whose static type ct cannot
// match the type service.yml's state_schema declares for state key k
// (properties.<k>.type): it would fail only at commit, after every host's
// work. Unknown types (dyn, null) fit anything; the commit checks them.
func (p *parser) checkStateType(svc *Service, pos Pos, key, k string, ct *cel.Type) {
	if svc == nil || svc.Manifest.StateSchema == nil || ct == nil {
		return
	}
	props, _ := svc.Manifest.StateSchema["properties"].(map[string]any)
	prop, _ := props[k].(map[string]any)
	want := schemaTypes(prop["type"])
	if len(want) == 0 {
		return
	}
	for _, w := range want {
		if schemaTypeFits(w, ct) {
			return
		}
	}
	p.add(pos, key, fmt.Sprintf("state key %s must be %s (service.yml state_schema), but this value is %s: the commit would refuse it after every host's work",
		k, strings.Join(want, " or "), stateTypeName(ct)))
}

// schemaTypes reads a JSON Schema type: a name or a list of names.
func schemaTypes(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// schemaTypeFits reports whether a value of static type ct can be of the
// JSON Schema type name.
func schemaTypeFits(name string, ct *cel.Type) bool {
	k := ct.Kind()
	switch k {
	case types.DynKind, types.AnyKind, types.NullTypeKind, types.ErrorKind, types.TypeParamKind, types.OpaqueKind:
		return true
	}
	switch name {
	case "string":
		return k == types.StringKind
	case "integer":
		return k == types.IntKind || k == types.UintKind
	case "number":
		return k == types.IntKind || k == types.UintKind || k == types.DoubleKind
	case "boolean":
		return k == types.BoolKind
	case "array":
		return k == types.ListKind
	case "object":
		return k == types.MapKind || k == types.StructKind
	case "null":
		return false
	}
	return true // a type name JSON Schema does not have: the schema compiler reports it
}

// stateTypeName names a static type in JSON Schema's words.
func stateTypeName(ct *cel.Type) string {
	switch ct.Kind() {
	case types.StringKind:
		return "a string"
	case types.IntKind, types.UintKind:
		return "an integer"
	case types.DoubleKind:
		return "a number"
	case types.BoolKind:
		return "a boolean"
	case types.ListKind:
		return "an array"
	case types.MapKind, types.StructKind:
		return "an object"
	}
	return ct.String()
}
