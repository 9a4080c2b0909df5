package expr

import (
	"encoding/json"
	"slices"
	"strings"
)

// KeyOrder remembers the order in which the service's YAML files wrote the
// keys of their maps (issue 37), so that a map iterates as Ansible's
// (Python's insertion-ordered dict) does: a `loop:` over a map, keys(),
// dict2items and a template's `for k, v in m.items()` see the keys in the
// order the file wrote them.
//
// Go maps carry no order, and the values cross merges, CEL and JSON (to
// the soul), so the order is kept apart from the values, by key set: a map
// whose keys are exactly those of a map the YAML wrote iterates in that
// map's order. Two YAML maps with the same keys in different orders make
// that key set ambiguous, and a map whose key set the YAML never wrote
// (computed, merged) has no YAML order: both iterate in key order, as
// before. Either way the same input gives the same order on every host and
// every run (SPEC §9). A nil *KeyOrder orders every map by key.
type KeyOrder struct {
	orders [][]string
	index  map[string]int // key-set signature → orders index; -1 ambiguous
}

// maxKeyOrders bounds how many orders one KeyOrder keeps (the DSL's node
// budget bounds it anyway; this bounds what a soul accepts).
const maxKeyOrders = 100000

func signature(keys []string) string {
	s := slices.Clone(keys)
	slices.Sort(s)
	return strings.Join(s, "\x00")
}

// Add records keys, a map's keys in the order its YAML wrote them. Maps of
// fewer than two keys have one order and are not recorded.
func (o *KeyOrder) Add(keys []string) {
	if o == nil || len(keys) < 2 || len(o.orders) >= maxKeyOrders {
		return
	}
	if o.index == nil {
		o.index = map[string]int{}
	}
	sig := signature(keys)
	i, seen := o.index[sig]
	switch {
	case !seen:
		o.index[sig] = len(o.orders)
		o.orders = append(o.orders, slices.Clone(keys))
		return
	case i >= 0 && slices.Equal(o.orders[i], keys):
		return
	case i >= 0:
		o.index[sig] = -1
	}
	// Kept so that the ambiguity survives the wire (UnmarshalJSON re-adds).
	o.orders = append(o.orders, slices.Clone(keys))
}

// Merge adds every order of p.
func (o *KeyOrder) Merge(p *KeyOrder) {
	if o == nil || p == nil {
		return
	}
	for _, keys := range p.orders {
		o.Add(keys)
	}
}

// Empty tells whether o orders every map by key.
func (o *KeyOrder) Empty() bool { return o == nil || len(o.orders) == 0 }

// Keys returns m's keys in the order the YAML wrote them when o knows it,
// else sorted.
func (o *KeyOrder) Keys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if !o.Empty() && len(keys) > 1 {
		if i, ok := o.index[signature(keys)]; ok && i >= 0 {
			return slices.Clone(o.orders[i])
		}
	}
	slices.Sort(keys)
	return keys
}

// MarshalJSON writes the recorded orders as a list of key lists.
func (o *KeyOrder) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	return json.Marshal(o.orders)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (o *KeyOrder) UnmarshalJSON(b []byte) error {
	var orders [][]string
	if err := json.Unmarshal(b, &orders); err != nil {
		return err
	}
	*o = KeyOrder{}
	for _, keys := range orders {
		o.Add(keys)
	}
	return nil
}

// For returns the part of o that orders the maps inside vs (what a piece
// of work sent to a soul needs), or nil when none of them has a YAML order.
func (o *KeyOrder) For(vs ...any) *KeyOrder {
	if o.Empty() {
		return nil
	}
	out := &KeyOrder{}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 100 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if len(x) > 1 {
				keys := make([]string, 0, len(x))
				for k := range x {
					keys = append(keys, k)
				}
				if i, ok := o.index[signature(keys)]; ok {
					if i >= 0 {
						out.Add(o.orders[i])
					} else {
						o.addAll(out, signature(keys))
					}
				}
			}
			for _, e := range x {
				walk(e, depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	for _, v := range vs {
		walk(v, 0)
	}
	if out.Empty() {
		return nil
	}
	return out
}

// addAll adds to out every order of o with signature sig (an ambiguous
// key set stays ambiguous there).
func (o *KeyOrder) addAll(out *KeyOrder, sig string) {
	for _, keys := range o.orders {
		if signature(keys) == sig {
			out.Add(keys)
		}
	}
}
