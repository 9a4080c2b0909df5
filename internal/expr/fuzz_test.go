package expr

import (
	"context"
	"runtime"
	"testing"

	"github.com/google/cel-go/cel"

	"github.com/soulstack/soulstack/internal/domain"
)

// FuzzTypeCheckAndEval feeds expressions to the static type checker and to
// the evaluator: neither may panic, a type error is always a *TypeError, and
// evaluation stays within the cost and size bounds (SPEC §7).
func FuzzTypeCheckAndEval(f *testing.F) {
	for _, s := range []string{
		`register.check.stdout == "x"`, `size(register.check) == 0`, `register.check.hosts["a"].rc > 0`,
		`soulprint.self.os.family`, `item`, `input.s + 1`, `to_json(to_json(to_json(essence)))`,
		`join(essence.l, essence.s)`, `shquote(input.s)`, `essence.m.map(k, k)`, `b64enc(b64enc(input.s))`,
		`soulprint.where("self.sid == 'a'")`, `default(input.x, 1)`, `run.check_mode`, `incarnation.nam`,
		`from_json(to_json({'a': [1, 2.5, true, null]}))`, `split(input.s, "")`, `"x" in input`,
		`input.s.replace("", input.s)`, `essence.l.join(input.s)`, `"%s-%d".format([input.s, input.n])`,
		`strings.quote(strings.quote(input.s))`, `input.s.split("").map(x, x + x).join()`,
	} {
		f.Add(s)
	}
	env := ForKind(KindScenario)
	regs := NewRegisters()
	regs.Set("check", "a", domain.Result{Stdout: "ok", Data: map[string]any{"cmd": "x"}})
	act := &Activation{
		Input:     map[string]any{"s": "a'b;c", "n": int64(3)},
		Essence:   map[string]any{"s": "-", "l": []any{"a", "b"}, "m": map[string]any{"x": int64(1), "y": 2.5}},
		Registers: regs, CurrentSID: "a",
		Soulprint: Soulprint{Self: map[string]any{"sid": "a"}, Hosts: []map[string]any{{"sid": "a"}}},
	}
	sc := &TypeScope{
		Input:     &Shape{Fields: map[string]*cel.Type{"s": cel.StringType, "n": cel.IntType}, Open: true},
		Registers: map[string]*Shape{"check": {Name: "a core.exec.run result", Fields: map[string]*cel.Type{"stdout": cel.StringType, "rc": cel.IntType, "cmd": cel.StringType}}},
		Item:      cel.DynType,
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2000 {
			return
		}
		p, err := env.Compile(src)
		if err != nil {
			return
		}
		if _, err := env.TypeCheck(src, sc); err != nil {
			if _, ok := err.(*TypeError); !ok {
				t.Fatalf("TypeCheck(%q) error %T: %v", src, err, err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := p.Eval(context.Background(), act)
		runtime.ReadMemStats(&after)
		if err == nil && SizeOf(v, MaxResultBytes) > MaxResultBytes {
			t.Fatalf("%q yields a value over the size bound", src)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Fatalf("%q allocated %d MB", src, alloc>>20)
		}
	})
}
