package expr

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocDuring runs f and returns the bytes allocated meanwhile.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// assertBombsFailFast evaluates each expression of bombs and fails the test
// unless it ends in the cost-limit or size-limit error within maxTime,
// having allocated at most maxAlloc bytes.
func assertBombsFailFast(t *testing.T, env *Env, act *Activation, bombs map[string]string, maxTime time.Duration, maxAlloc uint64) {
	t.Helper()
	for name, src := range bombs {
		t.Run(name, func(t *testing.T) {
			p, err := env.Compile(src)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			var evalErr error
			start := time.Now()
			alloc := allocDuring(func() { _, evalErr = p.Eval(context.Background(), act) })
			if evalErr == nil {
				t.Fatal("the bomb evaluated without error")
			}
			if !errors.Is(evalErr, ErrCostLimit) && !strings.Contains(evalErr.Error(), ErrTooLarge.Error()) {
				t.Fatalf("error %v names neither the cost limit nor the size limit", evalErr)
			}
			if d := time.Since(start); d > maxTime {
				t.Errorf("took %s to fail", d)
			}
			if alloc > maxAlloc {
				t.Errorf("allocated %d MB before failing", alloc>>20)
			}
		})
	}
}

// TestM1FunctionBombsFailFast reproduces the audit's M1 finding: our own
// functions (to_json, join, b64enc, …) were not charged by the cost limit,
// so a 300-byte expression built a 100 MB string (25 nested to_json) in the
// Keeper. Each must now fail fast, with a clear message, allocating little.
func TestM1FunctionBombsFailFast(t *testing.T) {
	env := ForKind(KindScenario)
	act := &Activation{Essence: map[string]any{"s": strings.Repeat("x", 500_000)}}
	bombs := map[string]string{
		"25 nested to_json":                "size(" + strings.Repeat("to_json(", 25) + `'\\'` + strings.Repeat(")", 25) + ")",
		"join of a repeated 500 KB string": `size(join([essence.s, essence.s, essence.s, essence.s, essence.s, essence.s], "-"))`,
		"nested b64enc":                    "size(" + strings.Repeat("b64enc(", 30) + "essence.s" + strings.Repeat(")", 30) + ")",
		"to_json of a list":                `size(to_json([essence.s, essence.s, essence.s]))`,
	}
	assertBombsFailFast(t, env, act, bombs, 2*time.Second, 64<<20)
}

// TestM1ResultBound: an expression's value is bounded (1 MiB).
func TestM1ResultBound(t *testing.T) {
	env := ForKind(KindScenario)
	act := &Activation{Essence: map[string]any{"big": strings.Repeat("y", MaxResultBytes+10), "ok": strings.Repeat("y", 1000)}}
	p, err := env.Compile("essence.big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(context.Background(), act); err == nil || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a value over 1 MiB evaluated: err = %v", err)
	}
	p, _ = env.Compile("to_json(essence.ok)")
	if v, err := p.Eval(context.Background(), act); err != nil || len(v.(string)) != 1002 {
		t.Fatalf("a small value failed: %v", err)
	}
}

// TestM1InterpolationBound: many bounded expressions in one string cannot
// build an unbounded string.
func TestM1InterpolationBound(t *testing.T) {
	env := ForKind(KindScenario)
	act := &Activation{Essence: map[string]any{"s": strings.Repeat("z", 900_000)}}
	tpl, err := env.ParseTemplate("x" + strings.Repeat("${ essence.s }", 20))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpl.Render(context.Background(), act); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want the size bound", err)
	}
}

// TestL7Shquote: shquote(x) yields one /bin/sh word equal to x, whatever x
// holds (the audit's L7 injection payload included).
func TestL7Shquote(t *testing.T) {
	env := ForKind(KindScenario)
	for _, in := range []any{"world; id > /tmp/inj_marker_$$", `it's "quoted" $(id) ` + "`id`\n\\", "", int64(600100000)} {
		act := &Activation{Input: map[string]any{"x": in}}
		p, err := env.Compile("shquote(input.x)")
		if err != nil {
			t.Fatal(err)
		}
		q, err := p.Eval(context.Background(), act)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+q.(string)).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if want := Stringify(in); string(out) != want {
			t.Errorf("shquote(%q) = %s, the shell read %q", in, q, out)
		}
	}
}
