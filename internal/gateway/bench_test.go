package gateway_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/testutil"
)

// benchSouls is the fleet size of the dispatch benchmarks
// ($SOULSTACK_BENCH_SOULS, default 1000).
func benchSouls(b *testing.B) int {
	n := 1000
	if v := os.Getenv("SOULSTACK_BENCH_SOULS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("SOULSTACK_BENCH_SOULS=%q", v)
		}
	}
	return n
}

func pingAll(b *testing.B, d dispatch.Dispatcher, sids []string, round int) {
	reqs := calls(sids, fmt.Sprint("ping-", round), "core.test.ping", nil, 30*time.Second)
	res := d.Dispatch(context.Background(), reqs, nil)
	for _, sid := range sids {
		if r := res[sid]; r.Failed || r.Unreachable || r.Stdout != "pong" {
			b.Fatalf("ping %s = %+v", sid, r)
		}
	}
}

// BenchmarkDispatchPing dispatches one core.test.ping to N in-process
// agents (each its own TLS connection, real module code) and waits for
// every result: one op is one fan-out over the whole fleet (SPEC §15).
func BenchmarkDispatchPing(b *testing.B) {
	n := benchSouls(b)
	dir := b.TempDir()
	k := startKeeper(b, filepath.Join(dir, "keeper"), keeperOpts{heartbeat: 10 * time.Second, fanOut: n})
	tok := k.joinToken(b)
	sids := make([]string, n)
	for i := range sids {
		sids[i] = fmt.Sprintf("bench-%05d", i)
		runAgent(b, soul.Config{KeeperURL: k.url, SID: sids[i], DataDir: filepath.Join(dir, sids[i]), JoinToken: tok,
			MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second})
	}
	testutil.WaitFor(b, time.Minute, func() bool { return len(k.gw.ConnectedSIDs()) == n }, "%d souls connected", n)
	pingAll(b, k.gw, sids, -1) // warm up
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		pingAll(b, k.gw, sids, i)
	}
	b.ReportMetric(float64(n), "souls")
}

// BenchmarkDispatchPingSwarm is BenchmarkDispatchPing against a real
// `soul swarm` process, so the test process holds only the keeper side:
// it also reports the keeper's heap and stack bytes per connected soul.
func BenchmarkDispatchPingSwarm(b *testing.B) {
	n := benchSouls(b)
	dir := b.TempDir()
	k := startKeeper(b, filepath.Join(dir, "keeper"), keeperOpts{heartbeat: 10 * time.Second, fanOut: n, quiet: true})
	heap0, stack0 := liveBytes()
	g0 := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, soulBin, "swarm", "--keeper", k.url, "--count", strconv.Itoa(n),
		"--data-dir", filepath.Join(dir, "swarm"), "--sid-prefix", "swarm", "--reconnect-min", "100ms", "--reconnect-max", "2s")
	cmd.Env = append(os.Environ(), "SOUL_JOIN_TOKEN="+k.joinToken(b))
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if b.Failed() {
			b.Logf("swarm output:\n%s", out)
		}
	})
	testutil.WaitFor(b, 2*time.Minute, func() bool { return len(k.gw.ConnectedSIDs()) == n }, "%d souls connected", n)
	sids := k.gw.ConnectedSIDs()
	pingAll(b, k.gw, sids, -1)
	heap1, stack1 := liveBytes()
	goroutines := float64(runtime.NumGoroutine()-g0) / float64(n)
	heapPerSoul, stackPerSoul := float64(heap1-heap0)/float64(n), float64(stack1-stack0)/float64(n)
	if p := os.Getenv("SOULSTACK_BENCH_HEAPPROFILE"); p != "" {
		writeHeapProfile(b, p)
	}

	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		pingAll(b, k.gw, sids, i)
	}
	b.ReportMetric(float64(n), "souls")
	b.ReportMetric(heapPerSoul+stackPerSoul, "keeper-B/soul")
	b.ReportMetric(stackPerSoul, "keeper-stack-B/soul")
	b.ReportMetric(goroutines, "keeper-goroutines/soul")
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// liveBytes is the heap in use and the goroutine stacks after a few
// collections.
func liveBytes() (heap, stack int64) {
	for range 5 { // stacks shrink by half per collection while mostly unused
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}
