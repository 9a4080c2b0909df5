package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/testutil"
)

// BenchmarkSoulIdle is SPEC §15's soul idle footprint: one real `soul run`
// process (built like a release) connected to an in-process keeper, which
// has sent it two pings (its incarnation's create and one run) so that the work path is warm. After it settles
// ($SOULSTACK_BENCH_IDLE_SETTLE, default 10 s) its RSS is read from /proc,
// and its CPU time over a window ($SOULSTACK_BENCH_IDLE_WINDOW, default
// 30 s — with the default 15 s heartbeat, two heartbeats fall in it).
// One op is one such measurement; run it with -benchtime 1x (or Nx for N
// fresh processes, reported as medians).
func BenchmarkSoulIdle(b *testing.B) {
	settle := time.Duration(envInt(b, "SOULSTACK_BENCH_IDLE_SETTLE", 10)) * time.Second
	window := time.Duration(envInt(b, "SOULSTACK_BENCH_IDLE_WINDOW", 30)) * time.Second
	ctx := context.Background()
	e := startKeeper(b, nil)
	e.registerService("ping", pingService)
	bin := soulBinary(b)

	var rss, peak []int64 // bytes
	var cpu []time.Duration
	i := 0
	for b.Loop() {
		i++
		sid := fmt.Sprintf("idle-%02d", i)
		dir := filepath.Join(e.dir, sid)
		p := testutil.StartProcess(b, "soul "+sid, bin, "run", "--keeper", "https://"+e.addr, "--join-token", e.joinToken(sid),
			"--sid", sid, "--data-dir", dir, "--root", filepath.Join(dir, "root"), "--log-level", "warn")
		e.waitConnected(sid, 1, p, time.Minute)
		if _, err := e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: sid, Service: "ping", Covens: []string{sid}}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.runScenario(ctx, sid, "ping", nil); err != nil {
			b.Fatal(err)
		}
		time.Sleep(settle)
		s0, err := readProc(p.PID())
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(window)
		s1, err := readProc(p.PID())
		if err != nil {
			b.Fatal(err)
		}
		cpuNS := (s1.CPUTick - s0.CPUTick) * int64(time.Second/clockTick)
		b.Logf("soul %s: RSS %.1f MiB after settling, %.1f MiB after the window (peak %.1f MiB); CPU %d ms over %s",
			sid, mib(s0.RSS), mib(s1.RSS), mib(s1.HWM), cpuNS/1e6, window)
		rss = append(rss, max(s0.RSS, s1.RSS))
		peak = append(peak, s1.HWM)
		cpu = append(cpu, time.Duration(cpuNS))
		p.Kill()
	}
	b.ReportMetric(mib(median(rss)), "rss-MiB")
	b.ReportMetric(mib(median(peak)), "peak-rss-MiB")
	b.ReportMetric(100*float64(median(cpu))/float64(window), "cpu-%")
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
