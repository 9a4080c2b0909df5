package expr

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestKeyOrder (issue 37): a map iterates in the order the YAML wrote its
// keys; a key set written in two orders, or never written, iterates
// sorted; the order survives JSON (the wire to a soul) and For keeps only
// what the given values need.
func TestKeyOrder(t *testing.T) {
	o := &KeyOrder{}
	o.Add([]string{"zoe", "ann", "mia"})
	o.Add([]string{"b", "a"})
	o.Add([]string{"a", "b"}) // the same keys in another order: ambiguous
	o.Add([]string{"zoe", "ann", "mia"})

	users := map[string]any{"ann": 1, "mia": 2, "zoe": 3}
	for name, tc := range map[string]struct {
		m    map[string]any
		want []string
	}{
		"yaml order":  {users, []string{"zoe", "ann", "mia"}},
		"ambiguous":   {map[string]any{"a": 1, "b": 2}, []string{"a", "b"}},
		"never wrote": {map[string]any{"zoe": 1, "ann": 2}, []string{"ann", "zoe"}},
	} {
		if got := o.Keys(tc.m); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Keys = %v, want %v", name, got, tc.want)
		}
	}
	var none *KeyOrder
	if got := none.Keys(users); !slices.Equal(got, []string{"ann", "mia", "zoe"}) {
		t.Errorf("nil KeyOrder: %v, want sorted", got)
	}

	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back KeyOrder
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Keys(users); !slices.Equal(got, []string{"zoe", "ann", "mia"}) {
		t.Errorf("after JSON: %v", got)
	}
	if got := back.Keys(map[string]any{"a": 1, "b": 2}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after JSON an ambiguous key set is ordered %v", got)
	}

	sub := o.For(map[string]any{"x": []any{users}})
	if sub == nil || len(sub.orders) != 1 || !slices.Equal(sub.Keys(users), []string{"zoe", "ann", "mia"}) {
		t.Errorf("For = %+v, want only the users order", sub)
	}
	if o.For(map[string]any{"q": 1}) != nil {
		t.Error("For of values without ordered maps is not nil")
	}
}

// TestActivationIteratesInYAMLOrder: CEL comprehensions and keys() over a
// map from the activation follow its key order; CEL map literals and
// computed maps stay sorted.
func TestActivationIteratesInYAMLOrder(t *testing.T) {
	o := &KeyOrder{}
	o.Add([]string{"zoe", "ann", "mia"})
	act := &Activation{Order: o, Essence: map[string]any{"users": map[string]any{"ann": 1, "mia": 2, "zoe": 3}}}
	env := ForKind(KindScenario)
	for src, want := range map[string]string{
		`${ join(essence.users.map(k, k), ",") }`:                       "zoe,ann,mia",
		`${ join(keys(essence.users), ",") }`:                           "zoe,ann,mia",
		`${ join(keys({"zoe": 1, "ann": 2, "mia": 3}), ",") }`:          "ann,mia,zoe",
		`${ join(keys(merge(essence.users, {"bob": 4})), ",") }`:        "ann,bob,mia,zoe",
		`${ join(essence.users.filter(k, k != "ann").map(k, k), ",") }`: "zoe,mia",
	} {
		got, err := env.Render(t.Context(), src, act)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got != want {
			t.Errorf("%s = %v, want %s", src, got, want)
		}
	}
}
