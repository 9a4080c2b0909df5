package expr

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMergeAndKeys: merge deep-merges with the right side winning, keys is
// sorted; both are declared for the type checker and charged by the cost
// limit like our other functions.
func TestMergeAndKeys(t *testing.T) {
	env := ForKind(KindScenario)
	act := &Activation{
		Essence: map[string]any{
			"defaults": map[string]any{"port": int64(80), "tls": map[string]any{"on": false, "ciphers": []any{"a", "b"}}, "name": "d"},
			"big":      strings.Repeat("x", 600_000),
		},
		Vars: map[string]any{"site": map[string]any{"tls": map[string]any{"on": true, "ciphers": []any{"c"}}, "name": "s"}},
	}
	cases := []struct {
		src  string
		want any
	}{
		{`merge(essence.defaults, vars.site)`, map[string]any{
			"port": int64(80), "name": "s", "tls": map[string]any{"on": true, "ciphers": []any{"c"}},
		}},
		{`merge(essence.defaults, {"port": {"http": 8080}}).port.http`, int64(8080)},
		{`merge({}, {})`, map[string]any{}},
		{`essence.defaults.tls.on`, false}, // merge did not modify its input
		{`keys({"b": 1, "c": 2, "a": 3})`, []any{"a", "b", "c"}},
		{`keys(merge(essence.defaults, vars.site))`, []any{"name", "port", "tls"}},
		{`keys({})`, []any{}},
		{`keys(essence.defaults.tls).map(k, k + "!")`, []any{"ciphers!", "on!"}},
	}
	for _, c := range cases {
		p, err := env.Compile(c.src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", c.src, err)
		}
		if _, err := env.TypeCheck(c.src, &TypeScope{}); err != nil {
			t.Errorf("TypeCheck(%s): %v", c.src, err)
		}
		got, err := p.Eval(context.Background(), act)
		if err != nil {
			t.Errorf("Eval(%s): %v", c.src, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.src, d)
		}
	}
	// Declared result types: keys is list(string), merge is a map.
	for _, bad := range []string{`keys({"a": 1})[0] + 1`, `merge({}, {}) + 1`} {
		if _, err := env.TypeCheck(bad, &TypeScope{}); err == nil {
			t.Errorf("TypeCheck(%s) accepted a type error", bad)
		}
	}
	for src, msg := range map[string]string{
		`merge(1, {})`:   "merge(a, b) needs two maps",
		`merge({}, [1])`: "merge(a, b) needs two maps",
		`keys("x")`:      "keys(m) needs a map",
		// two 600 KB values merged are over the 1 MiB bound of a value
		`merge({"a": essence.big}, {"b": essence.big})`: ErrTooLarge.Error(),
	} {
		p, err := env.Compile(src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		if _, err := p.Eval(context.Background(), act); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Eval(%s): err = %v, want %q", src, err, msg)
		}
	}
}

// TestMergeCost: nested merges of a large map are charged by their output
// size and hit the cost limit rather than running long.
func TestMergeCost(t *testing.T) {
	env := ForKind(KindScenario)
	m := map[string]any{}
	for i := 0; i < 2000; i++ {
		m[strings.Repeat("k", 1+i%50)+string(rune('a'+i%26))+strings.Repeat("x", i%7)] = strings.Repeat("v", 100)
	}
	act := &Activation{Essence: map[string]any{"m": m}}
	src := "size(" + strings.Repeat("merge(essence.m, ", 40) + "essence.m" + strings.Repeat(")", 40) + ")"
	p, err := env.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Eval(context.Background(), act)
	if !errors.Is(err, ErrCostLimit) {
		t.Fatalf("40 nested merges of a %d-byte map: err = %v, want the cost limit", SizeOf(m, 1<<30), err)
	}
}
