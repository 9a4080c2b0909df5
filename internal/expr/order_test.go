package expr

import (
	"context"
	"fmt"
	"testing"
)

// TestMapsIterateInKeyOrder (SPEC §9): comprehensions over maps see the
// keys sorted, every time (Go maps iterate at random: 30 keys would almost
// never come out sorted by chance, twice).
func TestMapsIterateInKeyOrder(t *testing.T) {
	m := map[string]any{}
	want := ""
	for i := range 30 {
		k := fmt.Sprintf("k%02d", i)
		m[k] = map[string]any{"n": int64(i)}
		if want != "" {
			want += ","
		}
		want += k
	}
	act := &Activation{Essence: map[string]any{"m": m, "l": []any{m}}, Vars: m}
	env := ForKind(KindScenario)
	for _, src := range []string{
		`join(essence.m.map(k, k), ",")`,
		`join(essence.l[0].map(k, k), ",")`,
		`join(vars.map(k, k), ",")`,
		`join(essence.m.filter(k, essence.m[k].n >= 0), ",")`,
	} {
		p, err := env.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := p.Eval(context.Background(), act)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s = %v, want %s", src, got, want)
			}
		}
	}
}
