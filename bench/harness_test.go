package bench

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/keepercmd"
	"github.com/soulstack/soulstack/internal/testutil"
)

// The soul binary is built once, on first use, so that `go test ./bench`
// without -bench builds nothing.
var (
	buildOnce    sync.Once
	soulPath     string
	buildCleanup = func() {}
	buildErr     error
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildCleanup()
	os.Exit(code)
}

// soulBinary builds ./cmd/soul (as `make build` does: no race detector,
// no coverage) and returns its path; $SOULSTACK_BENCH_SOUL names a soul
// binary to use instead (to compare builds).
func soulBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if soulPath = os.Getenv("SOULSTACK_BENCH_SOUL"); soulPath != "" {
			return
		}
		_, paths, cleanup, err := testutil.BuildBinaries("github.com/soulstack/soulstack/cmd/soul")
		if buildErr = err; err == nil {
			soulPath, buildCleanup = paths["soul"], cleanup
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return soulPath
}

// env is an in-process keeper on SQLite serving on loopback, with an
// admin client of its Operator API.
type env struct {
	tb    testing.TB
	dir   string
	k     *keeper.Keeper
	addr  string
	c     *apiclient.Client
	token string // the first Archon's (admin) token
	logs  *testutil.Buffer
	swarm swarmOpts // how startSwarm's souls arrive
}

// startKeeper initializes and serves a keeper on loopback in a fresh data
// directory with the product's defaults (tune may change them) and logs at
// warn.
func startKeeper(tb testing.TB, tune func(*config.Keeper)) *env {
	tb.Helper()
	return startKeeperOn(tb, "127.0.0.1:0", tune)
}

// startKeeperOn is startKeeper listening on addr.
func startKeeperOn(tb testing.TB, addr string, tune func(*config.Keeper)) *env {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "keeper")
	cfg.LogLevel = "warn"
	cfg.ShutdownTimeout = config.Duration(10 * time.Second)
	if tune != nil {
		tune(&cfg)
	}
	// The keeper process's collector settings, as `keeper serve` sets them
	// (GOGC and GOMEMLIMIT from the environment win).
	keepercmd.ApplyGCDefaults(os.Getenv)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	logs := &testutil.Buffer{}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		k.Close()
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- k.Serve(runCtx, ln) }()
	e := &env{tb: tb, dir: dir, k: k, addr: ln.Addr().String(), logs: logs, token: res.Token.Token}
	tb.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			tb.Errorf("keeper Serve: %v", err)
		}
		k.Close()
		if tb.Failed() {
			tb.Logf("keeper logs (warn and above):\n%s", tail(logs.String(), 4000))
		}
	})
	if e.c, err = apiclient.New("http://"+e.addr, res.Token.Token, apiclient.WithTimeout(5*time.Minute)); err != nil {
		tb.Fatal(err)
	}
	return e
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// registerService commits files (path → content) to a new local git
// repository and registers it as service name at branch main.
func (e *env) registerService(name string, files map[string]string) {
	e.tb.Helper()
	dir := filepath.Join(e.dir, "repos", name)
	if err := commitRepo(dir, files); err != nil {
		e.tb.Fatal(err)
	}
	if _, err := e.c.RegisterService(context.Background(), apitypes.RegisterServiceRequest{Name: name, Git: dir, Ref: "main"}); err != nil {
		e.tb.Fatalf("registering %s: %v", name, err)
	}
}

// commitRepo makes dir a git repository whose branch main holds files.
func commitRepo(dir string, files map[string]string) error {
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return fmt.Errorf("git init %s: %w", dir, err)
	}
	for p, content := range files {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
			return err
		}
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return fmt.Errorf("git add: %w", err)
	}
	_, err = wt.Commit("benchmark service", &git.CommitOptions{
		Author: &object.Signature{Name: "bench", Email: "bench@soulstack.invalid", When: time.Now()},
	})
	return err
}

// mapFS is files as a file system (for offline validation).
func mapFS(files map[string]string) fs.FS {
	m := fstest.MapFS{}
	for p, c := range files {
		m[p] = &fstest.MapFile{Data: []byte(c), Mode: 0o644}
	}
	return m
}

// joinToken creates a join token for covens.
func (e *env) joinToken(covens ...string) string {
	e.tb.Helper()
	jt, err := e.c.CreateJoinToken(context.Background(), apitypes.CreateJoinTokenRequest{Covens: covens, TTL: apitypes.Duration(24 * time.Hour)})
	if err != nil {
		e.tb.Fatal(err)
	}
	return jt.Token
}

// startSwarm starts one `soul swarm` process of n souls (SIDs
// <prefix>-0001 …) carrying covens, and waits until all are connected.
func (e *env) startSwarm(n int, prefix string, covens ...string) *testutil.Process {
	e.tb.Helper()
	return e.startSwarmAt(e.addr, n, prefix, covens...)
}

// startSwarmAt is startSwarm connecting to the keeper at addr.
func (e *env) startSwarmAt(addr string, n int, prefix string, covens ...string) *testutil.Process {
	e.tb.Helper()
	p := e.launchSwarm(addr, n, prefix, covens...)
	within := 5 * time.Minute
	if e.swarm.within > 0 {
		within = e.swarm.within
	}
	e.waitConnected(prefix+"-", n, p, within)
	return p
}

// launchSwarm starts the swarm of startSwarmAt without waiting for it.
func (e *env) launchSwarm(addr string, n int, prefix string, covens ...string) *testutil.Process {
	e.tb.Helper()
	args := []string{"swarm", "--keeper", "https://" + addr,
		"--join-token", e.joinToken(covens...), "--count", strconv.Itoa(n), "--sid-prefix", prefix,
		"--data-dir", filepath.Join(e.dir, "swarm-"+prefix), "--reconnect-min", "100ms", "--reconnect-max", "2s"}
	if e.swarm.sourceNet != "" {
		args = append(args, "--source-net", e.swarm.sourceNet)
	}
	if e.swarm.handshakes > 0 {
		args = append(args, "--max-handshakes", strconv.Itoa(e.swarm.handshakes))
	}
	// The swarm is the load, not what is measured: its garbage collector
	// may be tuned to fit a large swarm in memory
	// ($SOULSTACK_BENCH_SWARM_GOGC, $SOULSTACK_BENCH_SWARM_GOMEMLIMIT). The
	// keeper's runtime read its own settings when this process started.
	for _, kv := range [][2]string{{"GOGC", "SOULSTACK_BENCH_SWARM_GOGC"}, {"GOMEMLIMIT", "SOULSTACK_BENCH_SWARM_GOMEMLIMIT"}} {
		if v := os.Getenv(kv[1]); v != "" {
			old, had := os.LookupEnv(kv[0])
			os.Setenv(kv[0], v)
			defer func() {
				if had {
					os.Setenv(kv[0], old)
				} else {
					os.Unsetenv(kv[0])
				}
			}()
		}
	}
	return testutil.StartProcess(e.tb, "soul swarm", soulBinary(e.tb), args...)
}

// swarmOpts are how the next swarms arrive (the zero value: every soul
// from 127.0.0.1, all at once, 5 minutes to connect).
type swarmOpts struct {
	sourceNet  string        // --source-net: each soul its own source address
	handshakes int           // --max-handshakes: hellos in flight at once
	within     time.Duration // how long all may take to connect
}

// raiseFileLimit raises this process's open-file limit (inherited by the
// swarm it starts) to at least n when it can: 50,000 souls are 50,000
// connections on each side.
func raiseFileLimit(tb testing.TB, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	want := syscall.Rlimit{Cur: n, Max: max(n, lim.Max)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		want = syscall.Rlimit{Cur: lim.Max, Max: lim.Max} // not root: the hard limit is as far as it goes
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			tb.Fatal(err)
		}
	}
	if want.Cur < n {
		tb.Logf("open files limited to %d (want %d): run as root or raise the hard limit", want.Cur, n)
	}
}

// fileLimit is this process's open-file limit.
func fileLimit(tb testing.TB) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	return lim.Cur
}

// waitConnected waits until n souls whose SIDs start with prefix are
// connected to the keeper, failing early when process p exited.
func (e *env) waitConnected(prefix string, n int, p *testutil.Process, within time.Duration) {
	e.tb.Helper()
	start := time.Now()
	deadline := start.Add(within)
	self0, _ := readProc(os.Getpid())
	peer0, _ := readProc(p.PID())
	lastLog := start
	for {
		got := 0
		for _, sid := range e.k.Gateway().ConnectedSIDs() {
			if strings.HasPrefix(sid, prefix) {
				got++
			}
		}
		if got == n {
			return
		}
		if n >= 5000 && time.Since(lastLog) >= 15*time.Second {
			// Progress of a large swarm: how fast it connects, and who has
			// the CPU (this process is the keeper).
			lastLog = time.Now()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			self, _ := readProc(os.Getpid())
			peer, _ := readProc(p.PID())
			secs := time.Since(start).Seconds()
			e.tb.Logf("connecting: %5.0f s %6d connected; keeper CPU %.0f %% of a core, heap %d MiB, %d GCs (%.1f s paused), %d goroutines; swarm CPU %.0f %%, RSS %d MiB; load %s",
				secs, got, float64(self.CPUTick-self0.CPUTick)/clockTick/secs*100, m.HeapInuse>>20, m.NumGC, float64(m.PauseTotalNs)/1e9,
				runtime.NumGoroutine(), float64(peer.CPUTick-peer0.CPUTick)/clockTick/secs*100, peer.RSS>>20, loadAvg())
		}
		if p.Signal(syscall.Signal(0)) != nil {
			e.tb.Fatalf("soul process exited with %d of %d souls connected", got, n)
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("%d of %d souls connected after %s", got, n, within)
		}
		// ConnectedSIDs sorts every SID: polled every 50 ms at 19,500
		// souls it took 15 % of this process's CPU while they connected.
		time.Sleep(min(time.Second, time.Duration(50+n/20)*time.Millisecond))
	}
}

// procStat is what /proc says of a process.
type procStat struct {
	RSS     int64 // VmRSS, bytes
	HWM     int64 // VmHWM (peak RSS), bytes
	CPUTick int64 // utime+stime, in clock ticks
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTick = 100

func readProc(pid int) (procStat, error) {
	var st procStat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			st.RSS = kb << 10
		case "VmHWM:":
			st.HWM = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the command name (which may hold spaces) start at the
	// state, field 3; utime and stime are fields 14 and 15.
	rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return st, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	st.CPUTick = ut + stt
	return st, nil
}

// liveBytes is this process's heap in use plus goroutine stacks after a
// few collections (stacks shrink by half per collection while unused).
func liveBytes() (heap, stack int64) {
	for range 5 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}

// envInt reads a positive integer from the environment, else def.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// envInts reads a comma-separated list of positive integers, else def.
func envInts(tb testing.TB, name string, def []int) []int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			tb.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
