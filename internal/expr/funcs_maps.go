package expr

import (
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// mapFunctions declares merge(a, b) and keys(m) (SPEC §9). Their
// parameters are dyn, so essence, vars or a fact object (static object
// types) are accepted; a value that is not a map is a runtime error naming
// the function. Their results are typed: map(string, dyn) and list(string).
func mapFunctions() []cel.EnvOption {
	dyn := cel.DynType
	return []cel.EnvOption{
		cel.Function("merge",
			cel.Overload("merge_dyn_dyn", []*cel.Type{dyn, dyn}, cel.MapType(cel.StringType, dyn), cel.BinaryBinding(mergeImpl))),
		cel.Function("keys",
			cel.Overload("keys_dyn", []*cel.Type{dyn}, cel.ListType(cel.StringType), cel.UnaryBinding(keysImpl))),
	}
}

// mergeImpl deep-merges b into a: where both hold a map under the same key
// the maps are merged the same way, else b's value wins (lists are
// replaced, not appended). Neither argument is modified.
func mergeImpl(a, b ref.Val) ref.Val {
	_, aok := a.(traits.Mapper)
	_, bok := b.(traits.Mapper)
	if !aok || !bok {
		return types.NewErr("merge(a, b) needs two maps, got %s and %s", a.Type().TypeName(), b.Type().TypeName())
	}
	if size := valSize(a, MaxResultBytes*2) + valSize(b, MaxResultBytes*2); size > MaxResultBytes*2 {
		return tooLarge("merge", size)
	}
	an, err := toNative(a)
	if err != nil {
		return types.WrapErr(err)
	}
	bn, err := toNative(b)
	if err != nil {
		return types.WrapErr(err)
	}
	out := deepMerge(an.(map[string]any), bn.(map[string]any))
	if size := SizeOf(out, MaxResultBytes); size > MaxResultBytes {
		return tooLarge("merge", size)
	}
	return nativeToValue(out)
}

// deepMerge returns a new map: a's entries overlaid by b's, recursively
// where both are maps. The inputs are fresh copies (toNative) and are
// reused, not modified.
func deepMerge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, bv := range b {
		am, aIsMap := out[k].(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if aIsMap && bIsMap {
			out[k] = deepMerge(am, bm)
			continue
		}
		out[k] = bv
	}
	return out
}

// keysImpl returns the keys of a map, sorted (SPEC §9: maps iterate in key
// order everywhere), or in the order the YAML wrote them when the map
// came from it (KeyOrder; Ansible's dict2items keeps that order).
func keysImpl(m ref.Val) ref.Val {
	mp, ok := m.(traits.Mapper)
	if !ok {
		return types.NewErr("keys(m) needs a map, got %s", m.Type().TypeName())
	}
	if om, ok := m.(*orderedMap); ok && !om.order.Empty() {
		keys := om.order.Keys(om.m)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = k
		}
		return orderedAdapter{order: om.order}.NativeToValue(out)
	}
	var keys []string
	it := mp.Iterator()
	for it.HasNext() == types.True {
		k, err := toNative(it.Next())
		if err != nil {
			return types.WrapErr(err)
		}
		ks, isStr := k.(string)
		if !isStr {
			ks = Stringify(k)
		}
		keys = append(keys, ks)
	}
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return nativeToValue(out)
}
