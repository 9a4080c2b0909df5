package expr

import (
	"context"
	"fmt"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
)

// BenchmarkWherePerHost evaluates the seed's where: predicate once per host
// of a 10,000-host run (one op = the whole target).
func BenchmarkWherePerHost(b *testing.B) {
	const n = 10_000
	regs := NewRegisters()
	hosts := make([]map[string]any, n)
	for i := range n {
		sid := fmt.Sprintf("h%05d", i)
		hosts[i] = map[string]any{"sid": sid, "os": map[string]any{"family": "debian"}}
		role := "slave"
		if i == 0 {
			role = "master"
		}
		regs.Set("redis_role", sid, domain.Result{Stdout: role})
	}
	p, err := ForKind(KindScenario).CompileBool("register.redis_role.stdout == 'slave' && soulprint.self.os.family == 'debian' && size(register.redis_role) == incarnation.host_count")
	if err != nil {
		b.Fatal(err)
	}
	base := &Activation{Registers: regs, Soulprint: Soulprint{Hosts: hosts}, Incarnation: map[string]any{"host_count": n}}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		selected := 0
		for _, h := range hosts {
			ok, err := p.EvalBool(ctx, base.ForHost(h["sid"].(string), h))
			if err != nil {
				b.Fatal(err)
			}
			if ok {
				selected++
			}
		}
		if selected != n-1 {
			b.Fatalf("selected %d hosts, want %d", selected, n-1)
		}
	}
}
