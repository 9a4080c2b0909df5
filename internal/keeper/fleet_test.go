package keeper_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// The souls of a fleet, each confined to its own root; incarnations are
// made of coven "fleet", which they all carry.
var fleetSIDs = []string{"soul-a", "soul-b", "soul-c"}

const fleetInc = "fleet-1"

// fleet is a keeper with three real soul processes and the testdata/fleet
// service registered from a git repository made in the test.
type fleet struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	addr  string // the keeper's host:port
	fp    string // its CA fingerprint
	token string // the first Archon's token
	c     *apiclient.Client
	souls map[string]*testutil.Process
}

// backends runs fn once on SQLite and once on a fresh PostgreSQL database
// (skipped without SOULSTACK_TEST_DATABASE_URL, failed in CI).
func backends(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "") })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.FreshDatabase(t)) })
}

// inProcessKeeper initializes and serves a keeper in this process (so the
// race detector sees it) on a loopback port until the test ends.
func inProcessKeeper(t *testing.T, dbURL string) *fleet {
	t.Helper()
	return inProcessKeeperWith(t, dbURL, nil)
}

// inProcessKeeperWith is inProcessKeeper with tune, when not nil, changing
// the configuration first.
func inProcessKeeperWith(t *testing.T, dbURL string, tune func(*config.Keeper)) *fleet {
	t.Helper()
	ctx := context.Background()
	f := &fleet{t: t, ctx: ctx, dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(f.dir, "keeper")
	cfg.DatabaseURL = dbURL
	cfg.HeartbeatInterval = config.Duration(time.Second)
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	if tune != nil {
		tune(&cfg)
	}
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, f.addr = serveKeeper(t, cfg, "keeper")
	f.fp, f.token = res.Fingerprint, res.Token.Token
	f.connect()
	return f
}

// serveKeeper makes a keeper of cfg in this process and serves it on a
// loopback port until the test ends; its logs are shown, under name, if
// the test failed.
func serveKeeper(t *testing.T, cfg config.Keeper, name string) (*keeper.Keeper, string) {
	t.Helper()
	logs := &testutil.Buffer{}
	k, err := keeper.New(context.Background(), keeper.Config{Keeper: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := serveOn(t, k)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve of %s: %v", name, err)
		}
		k.Close()
		if t.Failed() {
			t.Logf("%s logs:\n%s", name, logs)
		}
	})
	return k, addr
}

// serveOn serves k on a loopback port; stop ends Serve and returns its
// error. It does not close k.
func serveOn(t *testing.T, k *keeper.Keeper) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- k.Serve(runCtx, ln) }()
	return ln.Addr().String(), sync.OnceValue(func() error {
		cancel()
		return <-served
	})
}

// binaryKeeper runs `keeper init` and `keeper serve` (the real binary, so
// the test can SIGKILL it); restart with f.serveBinary.
func binaryKeeper(t *testing.T, dbURL string) (*fleet, []string) {
	t.Helper()
	f := &fleet{t: t, ctx: context.Background(), dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	args := []string{"--data-dir", filepath.Join(f.dir, "keeper")}
	if dbURL != "" {
		args = append(args, "--database-url", dbURL)
	}
	cmd := exec.Command(keeperBin, append([]string{"init", "--archon-name", "root"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("keeper init: %v\n%s", err, stderr.String())
	}
	fp := regexp.MustCompile(`fingerprint[^:]*: ([0-9a-f]{64})`).FindStringSubmatch(stderr.String())
	if fp == nil {
		t.Fatalf("keeper init shows no fingerprint:\n%s", stderr.String())
	}
	f.addr, f.fp, f.token = testutil.FreeAddr(t), fp[1], strings.TrimSpace(stdout.String())
	return f, append(args, "--listen", f.addr, "--shutdown-timeout", "5s")
}

func (f *fleet) serveBinary(args []string) *testutil.Process {
	f.t.Helper()
	p := testutil.StartProcess(f.t, "keeper serve", keeperBin, append([]string{"serve"}, args...)...)
	f.connect()
	return p
}

// connect makes the client and waits for the keeper to be ready.
func (f *fleet) connect() {
	f.t.Helper()
	c, err := apiclient.New("http://"+f.addr, f.token)
	if err != nil {
		f.t.Fatal(err)
	}
	f.c = c
	testutil.WaitFor(f.t, 15*time.Second, func() bool { return c.Ready(f.ctx) == nil }, "keeper ready")
}

// startSouls starts the three souls with a join token of coven fleet and
// waits until they are connected.
func (f *fleet) startSouls() {
	f.t.Helper()
	jt, err := f.c.CreateJoinToken(f.ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"fleet"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, sid := range fleetSIDs {
		if err := os.MkdirAll(f.root(sid), 0o755); err != nil {
			f.t.Fatal(err)
		}
		f.souls[sid] = testutil.StartProcess(f.t, "soul "+sid, soulBin, "run", "--keeper", "https://"+f.addr, "--sid", sid,
			"--data-dir", filepath.Join(f.dir, sid), "--root", f.root(sid), "--join-token", jt.Token,
			"--reconnect-min", "50ms", "--reconnect-max", "300ms")
	}
	f.waitSouls(store.SoulConnected, fleetSIDs...)
}

func (f *fleet) waitSouls(status string, sids ...string) {
	f.t.Helper()
	testutil.WaitFor(f.t, 20*time.Second, func() bool {
		for _, sid := range sids {
			if s, err := f.c.GetSoul(f.ctx, sid); err != nil || s.Status != status {
				return false
			}
		}
		return true
	}, "souls %v %s", sids, status)
}

// killSoul SIGKILLs a soul by PID and waits for it to exit.
func (f *fleet) killSoul(sid string) {
	f.t.Helper()
	p := f.souls[sid]
	if err := p.Signal(syscall.SIGKILL); err != nil {
		f.t.Fatal(err)
	}
	p.Wait(10 * time.Second)
}

func (f *fleet) root(sid string) string { return filepath.Join(f.dir, sid, "root") }

// file reads a file a module wrote on a soul ("" when it does not exist).
func (f *fleet) file(sid, path string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root(sid), path))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fleet) mtime(sid, path string) time.Time {
	f.t.Helper()
	fi, err := os.Stat(filepath.Join(f.root(sid), path))
	if err != nil {
		f.t.Fatal(err)
	}
	return fi.ModTime()
}

// registerFleet commits testdata/fleet to a new git repository and
// registers it as service fleet.
func (f *fleet) registerFleet() {
	f.t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir("testdata/fleet", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel("testdata/fleet", p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	repo := catalogtest.NewRepo(f.t)
	repo.Commit(files, "fleet service")
	if _, err := f.c.RegisterService(f.ctx, apitypes.RegisterServiceRequest{Name: "fleet", Git: repo.Dir, Ref: "master"}); err != nil {
		f.t.Fatal(err)
	}
}

func terminal(status string) bool {
	switch status {
	case store.RunSucceeded, store.RunFailed, store.RunAborted, store.RunCancelled:
		return true
	}
	return false
}

// awaitRun polls GET /v1/runs/{id} until the run ended.
func (f *fleet) awaitRun(id string, within time.Duration) apitypes.RunDetail {
	f.t.Helper()
	var r apitypes.RunDetail
	testutil.WaitFor(f.t, within, func() bool {
		var err error
		r, err = f.c.GetRun(f.ctx, id)
		return err == nil && terminal(r.Status)
	}, "run %s to end", id)
	return r
}

// awaitSleep waits until a run of scenario slow is in its sleep: the stamp
// is written on every host before the sleep is dispatched, so once the
// keeper recorded it (and a moment passed) the souls are sleeping.
func (f *fleet) awaitSleep(id string) {
	f.t.Helper()
	testutil.WaitFor(f.t, 15*time.Second, func() bool {
		r, err := f.c.GetRun(f.ctx, id)
		return err == nil && r.Status == store.RunRunning && len(hosts(r, "Write the stamp")) == 3
	}, "run %s to reach its sleep", id)
	time.Sleep(300 * time.Millisecond)
}

// run starts scenario on the fleet incarnation and waits for its end.
func (f *fleet) run(scenario string, input map[string]any, check bool) apitypes.RunDetail {
	f.t.Helper()
	acc, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: scenario, Input: input, Check: check})
	if err != nil {
		f.t.Fatalf("starting %s: %v", scenario, err)
	}
	return f.awaitRun(acc.ApplyID, 30*time.Second)
}

// createFleet creates the fleet incarnation with motd "Hello", checks it
// is ready with the expected state and returns the create run.
func (f *fleet) createFleet() apitypes.RunDetail {
	f.t.Helper()
	acc, err := f.c.CreateIncarnation(f.ctx, apitypes.CreateIncarnationRequest{
		Name: fleetInc, Service: "fleet", Covens: []string{"fleet"}, Input: map[string]any{"motd": "Hello"},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	r := f.awaitRun(acc.ApplyID, 30*time.Second)
	if r.Status != store.RunSucceeded {
		f.t.Fatalf("create run %s: %s (%s)\n%s", r.ID, r.Status, r.Error, runJSON(r))
	}
	inc := f.incarnation()
	if inc.Status != store.IncarnationReady || !slices.Equal(inc.Members, fleetSIDs) {
		f.t.Fatalf("after create: status %s, members %v", inc.Status, inc.Members)
	}
	if d := cmp.Diff(helloState, inc.State); d != "" {
		f.t.Fatalf("committed state (-want +got):\n%s", d)
	}
	return r
}

func (f *fleet) incarnation() apitypes.Incarnation {
	f.t.Helper()
	inc, err := f.c.GetIncarnation(f.ctx, fleetInc)
	if err != nil {
		f.t.Fatal(err)
	}
	return inc
}

func (f *fleet) history() []apitypes.Snapshot {
	f.t.Helper()
	h, err := f.c.IncarnationHistory(f.ctx, fleetInc, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// helloState is what create with motd "Hello" commits: the input, a value
// derived from it, the number of hosts the probe registered and the
// run_once host's echo.
var helloState = map[string]any{
	"motd":        "Hello",
	"motd_sha256": sha256Hex("Hello"),
	"hosts":       float64(3),
	"first":       "soul-a",
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// hosts returns the per-host results of the task named name, by SID.
func hosts(r apitypes.RunDetail, name string) map[string]apitypes.RunHost {
	for _, t := range r.Tasks {
		if t.Name == name {
			m := map[string]apitypes.RunHost{}
			for _, h := range t.Hosts {
				m[h.SID] = h
			}
			return m
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

// destinyOutput is the output: of the destiny an apply task ran on a host.
func destinyOutput(h apitypes.RunHost) map[string]any {
	out, _ := h.Data["output"].(map[string]any)
	return out
}

func runJSON(r apitypes.RunDetail) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// apiError returns err as an *apiclient.APIError or fails.
func apiError(t *testing.T, err error) *apiclient.APIError {
	t.Helper()
	var ae *apiclient.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error, got %v", err)
	}
	return ae
}
