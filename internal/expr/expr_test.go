package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
)

// seedActivation is a three-host redis incarnation after the role probe.
func seedActivation(t *testing.T) *Activation {
	t.Helper()
	regs := NewRegisters()
	regs.Set("redis_role", "h1", domain.Result{Stdout: "master", Changed: false})
	regs.Set("redis_role", "h2", domain.Result{Stdout: "slave"})
	regs.Set("redis_role", "h3", domain.Result{Stdout: "slave"})
	regs.Set("elect", "h1", domain.Result{Stdout: "h1.example.com"})
	hosts := []map[string]any{
		{"sid": "h1", "os": map[string]any{"family": "debian"}, "covens": []any{"prod", "baremetal"}},
		{"sid": "h2", "os": map[string]any{"family": "redhat"}, "covens": []any{"prod"}},
		{"sid": "h3", "os": map[string]any{"family": "debian"}, "covens": []any{"prod"}},
	}
	return &Activation{
		Input:     map[string]any{"banner_text": "Managed by Soul Stack", "version": "7.0", "port": int64(6379)},
		Essence:   map[string]any{"redis_version": "7.0.15"},
		Registers: regs,
		Soulprint: Soulprint{Self: hosts[1], Hosts: hosts, Members: hosts},
		Incarnation: map[string]any{
			"name": "redis-prod", "host_count": int64(3), "covens": []any{"prod"}, "status": "applying",
		},
		CurrentSID: "h2",
	}
}

func TestSeedPredicates(t *testing.T) {
	ctx := context.Background()
	env := ForKind(KindScenario)
	tests := []struct {
		name string
		src  string
		mod  func(*Activation)
		want bool
	}{
		{"probe complete", "size(register.redis_role) < incarnation.host_count", nil, false},
		{"probe incomplete", "size(register.redis_role) < incarnation.host_count", func(a *Activation) { a.Incarnation["host_count"] = int64(4) }, true},
		{"current host is slave", "register.redis_role.stdout == 'slave'", nil, true},
		{"current host is master", "register.redis_role.stdout == 'slave'", func(a *Activation) { a.CurrentSID = "h1" }, false},
		{"contains self ok", `contains(register.self.stdout, "status:ok")`, func(a *Activation) { a.Self = domain.Result{Stdout: "x status:ok y"}.Map() }, true},
		{"not contains self ok", `!contains(register.self.stdout, "status:ok")`, func(a *Activation) { a.Self = domain.Result{Stdout: "status:starting"}.Map() }, true},
		{"method contains", `register.self.stdout.contains("ok")`, func(a *Activation) { a.Self = domain.Result{Stdout: "ok"}.Map() }, true},
		{"os family redhat", `soulprint.self.os.family == "debian"`, nil, false},
		{"os family debian", `soulprint.self.os.family == "debian"`, func(a *Activation) { a.Soulprint.Self = a.Soulprint.Hosts[0] }, true},
		{"hosts where", `size(soulprint.hosts.where("self.os.family == 'debian'")) == 2`, nil, true},
		{"soulprint where members", `soulprint.where("'baremetal' in self.covens")[0].sid == "h1"`, nil, true},
		{"hosts map", `register.redis_role.hosts["h1"].stdout == "master"`, nil, true},
		{"hosts size", `size(register.redis_role.hosts) == 3`, nil, true},
		{"has field", `has(register.redis_role.stdout)`, nil, true},
		{"list contains", `contains(soulprint.self.covens, "prod") && soulprint.self.covens.contains("prod")`, nil, true},
		{"default missing key", `default(soulprint.self.nothere, "x") == "x"`, nil, true},
		{"default null", `default(input.none, 5) == 5`, func(a *Activation) { a.Input["none"] = nil }, true},
		{"default present", `default(register.redis_role.stdout, "") == "slave"`, nil, true},
		{"default ambiguous register", `default(register.redis_role.stdout, "none") == "none"`, func(a *Activation) { a.CurrentSID = "" }, true},
		{"string funcs", `lower("AbC") == "abc" && "AbC".upper() == "ABC" && trim("  x ") == "x" && startsWith("redis", "re") && "redis".startsWith("re")`, nil, true},
		{"split join", `join(split("a,b,c", ","), "-") == "a-b-c" && "a b".split(" ").join("+") == "a+b"`, nil, true},
		{"json", `from_json(to_json({"a": [1, 2]})).a[1] == 2`, nil, true},
		{"sha256 b64", `sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" && b64dec(b64enc("hé")) == "hé"`, nil, true},
		{"matches", `matches("redis-7", "^redis-[0-9]+$")`, nil, true},
		{"int input compares", `input.port > 6000`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			act := seedActivation(t)
			if tt.mod != nil {
				tt.mod(act)
			}
			p, err := env.CompileBool(tt.src)
			if err != nil {
				t.Fatalf("compile %q: %v", tt.src, err)
			}
			got, err := p.EvalBool(ctx, act)
			if err != nil {
				t.Fatalf("eval %q: %v", tt.src, err)
			}
			if got != tt.want {
				t.Errorf("%q = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestRegisterSingleHostResolution(t *testing.T) {
	ctx := context.Background()
	env := ForKind(KindScenario)
	act := seedActivation(t)
	act.CurrentSID = "" // state_changes: no current host

	p, err := env.Compile("register.elect.stdout")
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Eval(ctx, act)
	if err != nil {
		t.Fatalf("single host result: %v", err)
	}
	if got != "h1.example.com" {
		t.Errorf("register.elect.stdout = %v, want h1.example.com", got)
	}

	p, err = env.Compile("register.redis_role.stdout")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Eval(ctx, act)
	want := `register.redis_role is ambiguous: 3 hosts have a result (h1, h2, h3) outside a per-host context; pick one with register.redis_role.hosts["<sid>"]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ambiguous register error = %v, want it to contain %q", err, want)
	}

	// A host the task did not run on falls back to the single result.
	act.CurrentSID = "h9"
	p, err = env.Compile("register.elect.stdout")
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Eval(ctx, act)
	if err != nil || v != "h1.example.com" {
		t.Errorf("fallback to single host = %v, %v", v, err)
	}
}

// SPEC §7: contains(haystack, needle) also works as a method, on maps too
// (key presence), including the map-typed roots input and essence.
func TestContainsMethodOnMaps(t *testing.T) {
	act := seedActivation(t)
	for src, want := range map[string]bool{
		`essence.contains("redis_version")`: true,
		`input.contains("nothere")`:         false,
		`{"a": 1}.contains("a")`:            true,
		`{1: "x"}.contains(1)`:              true,
	} {
		p, err := ForKind(KindScenario).CompileBool(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := p.EvalBool(context.Background(), act)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}
