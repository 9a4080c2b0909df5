package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
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
	var cpuTotal float64
	round := 0
	for b.Loop() {
		round++
		prefix := fmt.Sprintf("onb%d", round)
		start := time.Now()
		self0, err := readProc(os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		p := e.startSwarm(n, prefix, "onboard")
		// The gateway holds every session; the op ends when the store
		// says so too: all N connected with their soulprints.
		got, last := 0, 0
		deadline := time.Now().Add(2 * time.Minute)
		for {
			souls, err := e.k.Store().ListSouls(ctx, store.SoulFilter{})
			if err != nil {
				b.Fatal(err)
			}
			got = 0
			for _, s := range souls {
				if strings.HasPrefix(s.SID, prefix+"-") && s.Status == store.SoulConnected && len(s.Soulprint) > 0 {
					got++
				}
			}
			if got == n {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d souls stored connected with a soulprint after 2 minutes (%d a moment before)", got, n, last)
			}
			last = got
			time.Sleep(100 * time.Millisecond)
		}
		d := time.Since(start)
		total += d
		// CPU of both sides (the keeper is this process): on a shared
		// machine the wall time is mostly waiting for a core, this is not.
		self1, _ := readProc(os.Getpid())
		swarm, _ := readProc(p.PID())
		cpu := float64(self1.CPUTick-self0.CPUTick+swarm.CPUTick) / clockTick
		cpuTotal += cpu
		b.StopTimer()
		_ = p.Signal(syscall.SIGTERM)
		if err := p.Wait(30 * time.Second); err != nil {
			b.Logf("swarm stop: %v", err)
		}
		b.StartTimer()
		b.Logf("%d new souls onboarded in %s (CPU: keeper and swarm %.1f s)", n, d.Round(time.Millisecond), cpu)
	}
	b.ReportMetric(float64(n)/(total.Seconds()/float64(round)), "souls/s")
	b.ReportMetric(cpuTotal/float64(round), "cpu-s/op")
}
