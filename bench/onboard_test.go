package bench

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// BenchmarkOnboarding is issue 14's onboarding target (SPEC §15): N new
// souls ($SOULSTACK_BENCH_SOULS, default 1000) that the keeper has never
// seen, in one `soul swarm` process with one join token, each going
// through hello → key proof → accepted by the join token → soulprint
// stored → connected, against an in-process keeper on SQLite. One op is
// one fleet of N: from starting the process until every soul is connected
// and the store holds all N with their soulprints (target < 10 s).
func BenchmarkOnboarding(b *testing.B) {
	n := envInt(b, "SOULSTACK_BENCH_SOULS", 1000)
	e := startKeeper(b, nil)
	soulBinary(b)
	ctx := context.Background()
	var total time.Duration
	round := 0
	for b.Loop() {
		round++
		prefix := fmt.Sprintf("onb%d", round)
		start := time.Now()
		p := e.startSwarm(n, prefix, "onboard")
		souls, err := e.k.Store().ListSouls(ctx, store.SoulFilter{})
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		total += d
		got := 0
		for _, s := range souls {
			if len(s.SID) > len(prefix) && s.SID[:len(prefix)+1] == prefix+"-" && s.Status == store.SoulConnected && len(s.Soulprint) > 0 {
				got++
			}
		}
		if got != n {
			b.Fatalf("%d of %d souls stored connected with a soulprint", got, n)
		}
		b.StopTimer()
		_ = p.Signal(syscall.SIGTERM)
		if err := p.Wait(30 * time.Second); err != nil {
			b.Logf("swarm stop: %v", err)
		}
		b.StartTimer()
		b.Logf("%d new souls onboarded in %s", n, d.Round(time.Millisecond))
	}
	b.ReportMetric(float64(n)/(total.Seconds()/float64(round)), "souls/s")
}
