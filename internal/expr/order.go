package expr

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Maps iterate in key order everywhere (SPEC §9): a comprehension over a
// map (essence.users.map(u, u), .all, .exists, …) sees the keys sorted, so
// the same input gives the same result on every host and every run. Go maps
// iterate at random, so every map reaching CEL is adapted by orderedAdapter.

// orderedAdapter adapts map[string]any to a map with sorted iteration (or
// the YAML's order, when order knows the map's keys: KeyOrder), and lists
// so that the maps inside them are adapted the same way.
type orderedAdapter struct{ order *KeyOrder }

var _ types.Adapter = orderedAdapter{}

func (a orderedAdapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case map[string]any:
		return &orderedMap{Mapper: types.NewStringInterfaceMap(a, x).(traits.Mapper), m: x, order: a.order}
	case []any:
		return types.NewDynamicList(a, x)
	case []map[string]any:
		return types.NewDynamicList(a, x)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// nativeToValue is NativeToValue with ordered maps.
func nativeToValue(v any) ref.Val { return orderedAdapter{}.NativeToValue(v) }

// orderedMap is a CEL map whose iteration is in sorted key order, or in
// the YAML's order when order knows it.
type orderedMap struct {
	traits.Mapper
	m     map[string]any
	order *KeyOrder
}

func (o *orderedMap) Iterator() traits.Iterator {
	return newStringIterator(o.order.Keys(o.m))
}
