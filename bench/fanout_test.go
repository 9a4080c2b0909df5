package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/testutil"
)

// BenchmarkFanOut is SPEC §15's fan-out through the whole product: an
// in-process keeper on SQLite with its defaults, one `soul swarm` process
// of N souls ($SOULSTACK_BENCH_SOULS, default 1000) connected over TLS, the
// ping service registered from a git repository made here, one incarnation
// over all N (its create run — the same one-task scenario — is measured
// separately as create-*), then per op: POST /v1/incarnations/…/runs of
// the one-task scenario (core.test.ping on every soul) and wait until the
// run has committed. Metrics are medians over the ops (ns/op is the mean);
// the phases say where the time goes (see runTiming).
// $SOULSTACK_BENCH_CPUPROFILE profiles the keeper side during the runs;
// $SOULSTACK_BENCH_HEAPPROFILE writes its heap with the N souls connected;
// $SOULSTACK_BENCH_CONNECT_CPUPROFILE profiles it while they connect.
// keeper-cpu-ms/op is this process's CPU per run, keeper-gc-cpu-ms/op the
// part of it the Go runtime spent collecting garbage (runtime/metrics), and
// keeper-gc-cycles/op its collections per run (with GOGC and GOMEMLIMIT as
// this process has them).
//
// It also measures the keeper's memory per connected soul: live Go heap plus
// goroutine stacks of this process after GC, and its RSS, before (after
// returning free memory to the OS) and after the N souls connected, and
// after the runs (the process holds the keeper and this harness; the souls
// live in the swarm process).
func BenchmarkFanOut(b *testing.B) {
	n := envInt(b, "SOULSTACK_BENCH_SOULS", 1000)
	swarms := envInt(b, "SOULSTACK_BENCH_SWARMS", 1)
	ctx := context.Background()
	e := startKeeper(b, nil)
	e.registerService("ping", pingService)
	soulBinary(b)
	// Each soul is one connection, an open file on both sides: one keeper
	// process must be allowed n of them (plus its store, listener, API).
	raiseFileLimit(b, uint64(n)+4096)
	if lim := fileLimit(b); uint64(n)+200 > lim {
		b.Fatalf("%d souls need %d open files in the keeper process, the limit is %d (the hard limit; raising it needs CAP_SYS_RESOURCE): at most %d souls fit",
			n, n+200, lim, lim-200)
	}
	// The souls arrive as a fleet does: each from its own address (the
	// keeper limits failed hellos per source, audit finding L1), at most
	// $SOULSTACK_BENCH_HANDSHAKES saying hello at once.
	e.swarm = swarmOpts{
		handshakes: envInt(b, "SOULSTACK_BENCH_HANDSHAKES", 256),
		within:     time.Duration(envInt(b, "SOULSTACK_BENCH_CONNECT_SECONDS", 300)) * time.Second,
	}

	heap0, stack0 := liveBytes()
	debug.FreeOSMemory() // the baseline must not hold an earlier -count run's garbage
	self0, err := readProc(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	g0 := runtime.NumGoroutine()
	var stopConnectProfile func()
	if p := os.Getenv("SOULSTACK_BENCH_CONNECT_CPUPROFILE"); p != "" {
		stopConnectProfile = sync.OnceFunc(startCPUProfile(b, p))
		b.Cleanup(stopConnectProfile) // also when the souls fail to connect
	}
	connectStart := time.Now()
	// $SOULSTACK_BENCH_SWARMS processes share the souls (a process may
	// hold only so many open files); swarm i's souls dial from
	// 127.<i+1>.0.0/16, each from its own address.
	var sw []*testutil.Process
	for i := range swarms {
		e.swarm.sourceNet = fmt.Sprintf("127.%d.0.0/16", i+1)
		sw = append(sw, e.launchSwarm(e.addr, n/swarms+min(1, max(0, n%swarms-i)), fmt.Sprintf("fan%d", i), "fan"))
	}
	for i, p := range sw {
		e.waitConnected(fmt.Sprintf("fan%d-", i), n/swarms+min(1, max(0, n%swarms-i)), p, e.swarm.within)
	}
	connect := time.Since(connectStart)
	if stopConnectProfile != nil {
		stopConnectProfile()
	}
	time.Sleep(2 * time.Second) // soulprint writes and handshakes settle
	heap1, stack1 := liveBytes()
	self1, _ := readProc(os.Getpid())
	goroutines := runtime.NumGoroutine() - g0
	if p := os.Getenv("SOULSTACK_BENCH_HEAPPROFILE"); p != "" {
		writeHeapProfile(b, p)
	}

	create, err := e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "fan", Service: "ping", Covens: []string{"fan"}})
	if err != nil {
		b.Fatalf("create: %v", err)
	}
	b.Logf("%d souls connected in %s; create: %s", n, connect.Round(time.Millisecond), create)
	if _, err := e.runScenario(ctx, "fan", "ping", nil); err != nil { // warm up
		b.Fatal(err)
	}

	stopProfile := func() {}
	if p := os.Getenv("SOULSTACK_BENCH_CPUPROFILE"); p != "" {
		stopProfile = sync.OnceFunc(startCPUProfile(b, p))
		defer stopProfile()
	}
	var ts timings
	gc0 := readGCCPU()
	b.ResetTimer()
	for b.Loop() {
		rt, err := e.runScenario(ctx, "fan", "ping", nil)
		if err != nil {
			b.Fatal(err)
		}
		if rt.Results != n {
			b.Fatalf("run recorded %d results, want %d", rt.Results, n)
		}
		ts = append(ts, rt)
	}
	b.StopTimer()
	// Before liveBytes' forced collections, which are the benchmark's.
	stopProfile()
	gc := readGCCPU().since(gc0)
	b.Logf("keeper CPU during the runs: %s, of which GC %s (%.0f %%) in %d cycles; %s",
		gc.cpu, gc.gc.Round(time.Millisecond), 100*gc.gc.Seconds()/max(gc.cpu.Seconds(), 1e-9), gc.cycles, gcSettings())
	for i, rt := range ts {
		b.Logf("run %d: %s", i+1, rt)
	}

	heap2, stack2 := liveBytes()
	self2, _ := readProc(os.Getpid())
	var swarm procStat
	for _, p := range sw {
		st, _ := readProc(p.PID())
		swarm.RSS += st.RSS
	}
	per := func(d int64) float64 { return float64(d) / float64(n) }
	b.Logf("keeper heap+stack: before %d MiB, connected %d MiB, after runs %d MiB; RSS before %d MiB, connected %d MiB, after runs %d MiB (peak %d MiB); swarm RSS %d MiB",
		(heap0+stack0)>>20, (heap1+stack1)>>20, (heap2+stack2)>>20, self0.RSS>>20, self1.RSS>>20, self2.RSS>>20, self2.HWM>>20, swarm.RSS>>20)

	b.ReportMetric(float64(n), "souls")
	ts.report(b, "")
	b.ReportMetric(ms(create.Total), "create-ms")
	b.ReportMetric(ms(connect), "connect-all-ms")
	b.ReportMetric(per(heap1+stack1-heap0-stack0), "keeper-live-B/soul")
	b.ReportMetric(per(stack1-stack0), "keeper-stack-B/soul")
	b.ReportMetric(per(heap2+stack2-heap0-stack0), "keeper-live-after-runs-B/soul")
	b.ReportMetric(per(self1.RSS-self0.RSS), "keeper-rss-B/soul")
	b.ReportMetric(per(self2.RSS-self0.RSS), "keeper-rss-after-runs-B/soul")
	b.ReportMetric(float64(goroutines)/float64(n), "keeper-goroutines/soul")
	b.ReportMetric(float64(gc.cpu.Milliseconds())/float64(len(ts)), "keeper-cpu-ms/op")
	b.ReportMetric(float64(gc.gc.Milliseconds())/float64(len(ts)), "keeper-gc-cpu-ms/op")
	b.ReportMetric(float64(gc.cycles)/float64(len(ts)), "keeper-gc-cycles/op")
	b.ReportMetric(per(swarm.RSS), "swarm-rss-B/soul")
}

// startCPUProfile profiles this process (the keeper side) into path until
// stop; unlike -cpuprofile it leaves out the souls' connecting.
func startCPUProfile(b *testing.B, path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// writeHeapProfile writes this process's heap profile (the keeper side
// with N souls connected) to path.
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
