package expr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

// TestExtStringBombsFailFast: the string extensions (replace, join,
// format, quote) are bounded like our functions (SPEC §7): a result of
// n × len(s) bytes is refused before it is built. Before, a 100 KB essence
// string replaced into itself allocated 9.5 GB and took two minutes before
// the cost limit applied.
func TestExtStringBombsFailFast(t *testing.T) {
	env := ForKind(KindScenario)
	act := &Activation{Essence: map[string]any{"s": strings.Repeat("x", 100_000), "t": "ab", "k": strings.Repeat("x", 2000), "q": strings.Repeat(`\`, 1000)}}
	bombs := map[string]string{
		"replace into itself":       `size(essence.s.replace("x", essence.s))`,
		"replace with a count":      `size(essence.s.replace("x", essence.s, 50000))`,
		"replace the empty string":  `size(essence.t.replace("", essence.s).replace("", essence.s))`,
		"join of references":        `size(essence.k.split("").map(x, essence.s).join())`,
		"join with a separator":     `size(essence.k.split("").join(essence.s))`,
		"format of many references": `size(essence.k.replace("x", "%s").format(essence.k.split("").map(x, essence.s)))`,
		"nested quote":              "size(" + strings.Repeat("strings.quote(", 25) + "essence.q" + strings.Repeat(")", 25) + ")",
	}
	assertBombsFailFast(t, env, act, bombs, 5*time.Second, 96<<20)
	// The guarded functions still work.
	for src, want := range map[string]any{
		`"a-b-c".replace("-", "+")`:            "a+b+c",
		`"a-b-c".replace("-", "+", 1)`:         "a+b-c",
		`["a", "b"].join()`:                    "ab",
		`["a", "b"].join(", ")`:                "a, b",
		`"%s=%d (%.2f)".format(["k", 3, 0.5])`: "k=3 (0.50)",
		`strings.quote("a\"b")`:                `"a\"b"`,
	} {
		p, err := env.Compile(src)
		if err != nil {
			t.Fatalf("compile %s: %v", src, err)
		}
		got, err := p.Eval(context.Background(), &Activation{})
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}

// TestEveryFunctionIsCharged: each function beyond CEL's standard library
// — ours and the string extensions — is charged its output size or
// refuses an over-limit result before building it, or is listed here as
// returning a value of constant size. A function added without a bound
// fails this test.
func TestEveryFunctionIsCharged(t *testing.T) {
	constant := map[string]bool{
		// ints, bools and optionals: their size does not grow with input.
		"string_index_of_string": true, "string_index_of_string_int": true,
		"string_last_index_of_string": true, "string_last_index_of_string_int": true,
	}
	std, err := cel.NewEnv(cel.OptionalTypes(), cel.CrossTypeNumericComparisons(true))
	if err != nil {
		t.Fatal(err)
	}
	stdIDs := map[string]bool{}
	for _, fn := range std.Functions() {
		for _, o := range fn.OverloadDecls() {
			stdIDs[o.ID()] = true
		}
	}
	charged := map[string]bool{}
	for _, id := range append(append(append([]string(nil), ourOverloads...), extChargedOverloads...), ansibleOverloads...) {
		charged[id] = true
	}
	for id := range extGuarded {
		charged[id] = true
	}
	full, err := cel.NewEnv(ext.Strings(), cel.OptionalTypes(), cel.CrossTypeNumericComparisons(true), library(ForKind(KindScenario)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, fn := range full.Functions() {
		for _, o := range fn.OverloadDecls() {
			if stdIDs[o.ID()] {
				continue
			}
			n++
			if !charged[o.ID()] && !constant[o.ID()] {
				t.Errorf("%s (overload %s) is not charged by its output size: add it to ourOverloads, extChargedOverloads or extGuarded", name, o.ID())
			}
		}
	}
	if n < 30 {
		t.Fatalf("found only %d functions beyond the standard library", n)
	}
}

// TestEvalTimeBound: a comprehension over a very large list stays within
// the cost limit but, with cel-go's cost tracker, takes time quadratic in
// its length (tens of seconds for 200,000 elements); evaluation is bounded
// in time too (DefaultMaxEvalTime, 1 s here) and fails with a clear
// message.
func TestEvalTimeBound(t *testing.T) {
	env, err := NewEnv(KindScenario, WithMaxEvalTime(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ForKind(KindScenario).maxEvalTime != DefaultMaxEvalTime {
		t.Fatalf("the shared environments' time bound is %s", ForKind(KindScenario).maxEvalTime)
	}
	l := make([]any, 200_000)
	for i := range l {
		l[i] = int64(i)
	}
	act := &Activation{Essence: map[string]any{"l": l}}
	p, err := env.Compile(`size(essence.l.map(x, 1)) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.EvalBool(context.Background(), act)
	if err == nil || !errors.Is(err, ErrEvalTime) || !strings.Contains(err.Error(), "took too long (over 1s)") {
		t.Fatalf("err = %v, want the time bound", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to fail", d)
	}
	// A small list is fine, and a cancelled run still says so.
	ok, err := p.EvalBool(context.Background(), &Activation{Essence: map[string]any{"l": l[:100]}})
	if err != nil || !ok {
		t.Fatalf("small list: %v, %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.EvalBool(ctx, act); err == nil || errors.Is(err, ErrEvalTime) {
		t.Errorf("cancelled: err = %v, want the cancellation, not the time bound", err)
	}
}
