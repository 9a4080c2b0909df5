package bench

import (
	"context"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// BenchmarkFanOutFew is BenchmarkFanOut's run of the one-task scenario on a
// small incarnation in a large fleet: N souls ($SOULSTACK_BENCH_SOULS,
// default 1000) connected in coven "bg" and $SOULSTACK_BENCH_MEMBERS
// (default 3) more in coven "few", the incarnation over the few only. The
// run's cost should not depend on N (prepare reads the members' soulprints,
// not the fleet's).
func BenchmarkFanOutFew(b *testing.B) {
	n := envInt(b, "SOULSTACK_BENCH_SOULS", 1000)
	k := envInt(b, "SOULSTACK_BENCH_MEMBERS", 3)
	ctx := context.Background()
	e := startKeeper(b, nil)
	e.registerService("ping", pingService)
	soulBinary(b)
	e.startSwarm(n, "bg", "bg")
	e.startSwarm(k, "few", "few")

	if _, err := e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "few", Service: "ping", Covens: []string{"few"}}); err != nil {
		b.Fatalf("create: %v", err)
	}
	if _, err := e.runScenario(ctx, "few", "ping", nil); err != nil { // warm up
		b.Fatal(err)
	}
	var ts timings
	b.ResetTimer()
	for b.Loop() {
		rt, err := e.runScenario(ctx, "few", "ping", nil)
		if err != nil {
			b.Fatal(err)
		}
		if rt.Results != k {
			b.Fatalf("run recorded %d results, want %d", rt.Results, k)
		}
		ts = append(ts, rt)
	}
	b.StopTimer()
	for i, rt := range ts {
		b.Logf("run %d: %s", i+1, rt)
	}
	b.ReportMetric(float64(n), "souls")
	b.ReportMetric(float64(k), "members")
	ts.report(b, "")
}
