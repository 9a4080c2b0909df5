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
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
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
	souls map[string]*proc
}

// backends runs fn once on SQLite and once on a fresh PostgreSQL database
// (skipped without SOULSTACK_TEST_DATABASE_URL, failed in CI).
func backends(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "") })
	t.Run("postgres", func(t *testing.T) { fn(t, freshDatabase(t)) })
}

// inProcessKeeper initializes and serves a keeper in this process (so the
// race detector sees it) on a loopback port until the test ends.
func inProcessKeeper(t *testing.T, dbURL string) *fleet {
	t.Helper()
	ctx := context.Background()
	f := &fleet{t: t, ctx: ctx, dir: t.TempDir(), souls: map[string]*proc{}}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(f.dir, "keeper")
	cfg.DatabaseURL = dbURL
	cfg.HeartbeatInterval = config.Duration(time.Second)
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- k.Serve(runCtx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		k.Close()
		if t.Failed() {
			t.Logf("keeper logs:\n%s", logs)
		}
	})
	f.addr, f.fp, f.token = ln.Addr().String(), res.Fingerprint, res.Token.Token
	f.connect()
	return f
}

// binaryKeeper runs `keeper init` and `keeper serve` (the real binary, so
// the test can SIGKILL it); restart with f.serveBinary.
func binaryKeeper(t *testing.T, dbURL string) (*fleet, []string) {
	t.Helper()
	f := &fleet{t: t, ctx: context.Background(), dir: t.TempDir(), souls: map[string]*proc{}}
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
	f.addr, f.fp, f.token = freeAddr(t), fp[1], strings.TrimSpace(stdout.String())
	return f, append(args, "--listen", f.addr, "--shutdown-timeout", "5s")
}

func (f *fleet) serveBinary(args []string) *proc {
	f.t.Helper()
	p := start(f.t, "keeper serve", keeperBin, append([]string{"serve"}, args...)...)
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
	waitFor(f.t, 15*time.Second, func() bool { return c.Ready(f.ctx) == nil }, "keeper ready")
}

// startSouls starts the three souls with a join token of coven fleet and
// waits until they are connected.
func (f *fleet) startSouls() {
	f.t.Helper()
	jt, err := f.c.CreateJoinToken(f.ctx, apiclient.CreateJoinTokenRequest{Covens: []string{"fleet"}, TTL: apiclient.Duration(time.Hour)})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, sid := range fleetSIDs {
		if err := os.MkdirAll(f.root(sid), 0o755); err != nil {
			f.t.Fatal(err)
		}
		f.souls[sid] = start(f.t, "soul "+sid, soulBin, "run", "--keeper", "https://"+f.addr, "--sid", sid,
			"--data-dir", filepath.Join(f.dir, sid), "--root", f.root(sid), "--join-token", jt.Token,
			"--reconnect-min", "50ms", "--reconnect-max", "300ms")
	}
	f.waitSouls(store.SoulConnected, fleetSIDs...)
}

func (f *fleet) waitSouls(status string, sids ...string) {
	f.t.Helper()
	waitFor(f.t, 20*time.Second, func() bool {
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
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		f.t.Fatal(err)
	}
	p.wait(f.t, 10*time.Second)
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
	if _, err := f.c.RegisterService(f.ctx, apiclient.RegisterServiceRequest{Name: "fleet", Git: repo.Dir, Ref: "master"}); err != nil {
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
func (f *fleet) awaitRun(id string, within time.Duration) apiclient.RunDetail {
	f.t.Helper()
	var r apiclient.RunDetail
	waitFor(f.t, within, func() bool {
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
	waitFor(f.t, 15*time.Second, func() bool {
		r, err := f.c.GetRun(f.ctx, id)
		return err == nil && r.Status == store.RunRunning && len(hosts(r, "Write the stamp")) == 3
	}, "run %s to reach its sleep", id)
	time.Sleep(300 * time.Millisecond)
}

// run starts scenario on the fleet incarnation and waits for its end.
func (f *fleet) run(scenario string, input map[string]any, check bool) apiclient.RunDetail {
	f.t.Helper()
	acc, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: scenario, Input: input, Check: check})
	if err != nil {
		f.t.Fatalf("starting %s: %v", scenario, err)
	}
	return f.awaitRun(acc.ApplyID, 30*time.Second)
}

// createFleet creates the fleet incarnation with motd "Hello", checks it
// is ready with the expected state and returns the create run.
func (f *fleet) createFleet() apiclient.RunDetail {
	f.t.Helper()
	acc, err := f.c.CreateIncarnation(f.ctx, apiclient.CreateIncarnationRequest{
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

func (f *fleet) incarnation() store.Incarnation {
	f.t.Helper()
	inc, err := f.c.GetIncarnation(f.ctx, fleetInc)
	if err != nil {
		f.t.Fatal(err)
	}
	return inc
}

func (f *fleet) history() []store.Snapshot {
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
func hosts(r apiclient.RunDetail, name string) map[string]apiclient.RunHost {
	for _, t := range r.Tasks {
		if t.Name == name {
			m := map[string]apiclient.RunHost{}
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
func destinyOutput(h apiclient.RunHost) map[string]any {
	out, _ := h.Data["output"].(map[string]any)
	return out
}

func runJSON(r apiclient.RunDetail) string {
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

// TestRuns drives the run engine end to end through the Operator API with
// an in-process keeper and three real souls: create, idempotent re-run,
// check mode, one run at a time, a failure on one host with its lock and
// audited unlock, and an unreachable host.
func TestRuns(t *testing.T) {
	backends(t, testRuns)
}

func testRuns(t *testing.T, dbURL string) {
	f := inProcessKeeper(t, dbURL)
	f.startSouls()
	f.registerFleet()
	created := f.createFleet()
	for sid, h := range hosts(created, "Apply the site destiny") {
		if !h.Changed || destinyOutput(h)["label_changed"] != true {
			t.Errorf("create: the destiny on %s: changed %v, output %v", sid, h.Changed, destinyOutput(h))
		}
	}
	if got := sortedKeys(hosts(created, "First host by SID")); !slices.Equal(got, []string{"soul-a"}) {
		t.Errorf("run_once ran on %v", got)
	}
	for _, sid := range fleetSIDs {
		for path, want := range map[string]string{
			"srv/fleet/motd":       "Hello from " + sid + "\n",
			"srv/fleet/card.txt":   "host " + sid + " of " + fleetInc + "\nmotd Hello\n",
			"srv/fleet/site/label": "HELLO on " + sid + "\n",
		} {
			if got := f.file(sid, path); got != want {
				t.Errorf("%s:/%s = %q, want %q", sid, path, got, want)
			}
		}
	}
	hist := f.history()
	if len(hist) != 1 || hist[0].Scenario != "create" || cmp.Diff(helloState, hist[0].State) != "" || len(hist[0].Summary) != 3 {
		t.Fatalf("history after create: %+v", hist)
	}
	before := f.mtime("soul-b", "srv/fleet/motd")

	t.Run("rerun changes nothing", func(t *testing.T) {
		r := f.run("create", map[string]any{"motd": "Hello"}, false)
		if r.Status != store.RunSucceeded {
			t.Fatalf("re-run: %s (%s)", r.Status, r.Error)
		}
		n := 0
		for _, task := range r.Tasks {
			for _, h := range task.Hosts {
				n++
				if h.Changed || h.Status != string(domain.StatusOK) {
					t.Errorf("re-run: task %q on %s: status %s, changed %v", task.Name, h.SID, h.Status, h.Changed)
				}
			}
		}
		if n != 5*3+1 {
			t.Errorf("re-run has %d host results, want 16:\n%s", n, runJSON(r))
		}
		for sid, h := range hosts(r, "Apply the site destiny") {
			if destinyOutput(h)["label_changed"] != false {
				t.Errorf("re-run: the destiny on %s says %v", sid, destinyOutput(h))
			}
		}
		if got := f.mtime("soul-b", "srv/fleet/motd"); !got.Equal(before) {
			t.Errorf("the re-run rewrote the motd (mtime %v, was %v)", got, before)
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationReady || cmp.Diff(helloState, inc.State) != "" {
			t.Errorf("after re-run: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != 2 || h[0].RunID != r.ID || cmp.Diff(helloState, h[0].State) != "" {
			t.Errorf("history after the re-run (newest first): %+v", h)
		}
	})

	t.Run("check mode changes and commits nothing", func(t *testing.T) {
		hist := f.history()
		r := f.run("create", map[string]any{"motd": "Bonjour"}, true)
		if r.Status != store.RunSucceeded || !r.Check {
			t.Fatalf("check run: %s check=%v (%s)", r.Status, r.Check, r.Error)
		}
		for sid, h := range hosts(r, "Write the motd") {
			if !h.Changed || !strings.Contains(h.Diff, "Bonjour") {
				t.Errorf("check mode on %s: the motd would change, got changed=%v diff %q", sid, h.Changed, h.Diff)
			}
		}
		for sid, h := range hosts(r, "Apply the site destiny") {
			if !h.Changed || destinyOutput(h)["label_changed"] != true {
				t.Errorf("check mode: the destiny on %s would change its label: changed %v, output %v", sid, h.Changed, destinyOutput(h))
			}
		}
		probe := hosts(r, "Probe the motd")
		if len(probe) != 3 || !strings.HasPrefix(probe["soul-c"].Stdout, "Hello from soul-c") {
			t.Errorf("the read-only probe did not run in check mode: %+v", probe)
		}
		for _, sid := range fleetSIDs {
			if got := f.file(sid, "srv/fleet/motd"); got != "Hello from "+sid+"\n" {
				t.Errorf("check mode wrote %s's motd: %q", sid, got)
			}
			if got := f.file(sid, "srv/fleet/site/label"); got != "HELLO on "+sid+"\n" {
				t.Errorf("check mode wrote %s's site label through the destiny: %q", sid, got)
			}
		}
		if got := f.mtime("soul-b", "srv/fleet/motd"); !got.Equal(before) {
			t.Errorf("check mode touched the motd")
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationReady || cmp.Diff(helloState, inc.State) != "" {
			t.Errorf("after check run: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != len(hist) || h[0].ID != hist[0].ID {
			t.Errorf("check mode added history: %d snapshots, was %d", len(h), len(hist))
		}
	})

	t.Run("one run at a time", func(t *testing.T) {
		acc, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "slow", Input: map[string]any{"stamp": "s1", "duration": "2s"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "create"})
		ae := apiError(t, err)
		var active string
		if ae.Status != 409 || ae.Code != string(domain.CodeConflict) || json.Unmarshal(ae.Details, &active) != nil || active != acc.ApplyID {
			t.Fatalf("second run while %s is active: %v (details %s)", acc.ApplyID, err, ae.Details)
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationApplying || inc.ActiveRun != acc.ApplyID {
			t.Errorf("during the run: status %s, active run %q", inc.Status, inc.ActiveRun)
		}
		// Its progress streams as Server-Sent Events until the done event.
		ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
		defer cancel()
		slept := map[string]bool{}
		done, err := f.c.WatchRun(ctx, acc.ApplyID, func(ev apiclient.RunEvent) {
			if ev.Type == "host" && ev.Result != nil && ev.Result.TaskName == "Sleep" {
				slept[ev.Result.SID] = true
			}
		})
		if err != nil || done.Status != store.RunSucceeded || len(slept) != 3 {
			t.Fatalf("slow run's events: done %+v, %v; Sleep results from %v", done, err, slept)
		}
		if r := f.awaitRun(acc.ApplyID, 30*time.Second); r.Status != store.RunSucceeded {
			t.Fatalf("slow run: %s (%s)", r.Status, r.Error)
		}
		for _, sid := range fleetSIDs {
			if got := f.file(sid, "srv/fleet/stamp"); got != "s1\n" {
				t.Errorf("%s stamp %q", sid, got)
			}
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationReady || inc.State["stamp"] != "s1" {
			t.Errorf("after the slow run: %s %v", inc.Status, inc.State)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		inc0, hist := f.incarnation(), f.history()
		acc, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "slow", Input: map[string]any{"stamp": "cancelled", "duration": "30s"}})
		if err != nil {
			t.Fatal(err)
		}
		f.awaitSleep(acc.ApplyID)
		began := time.Now()
		if err := f.c.CancelRun(f.ctx, acc.ApplyID); err != nil {
			t.Fatal(err)
		}
		r := f.awaitRun(acc.ApplyID, 10*time.Second)
		if r.Status != store.RunCancelled || time.Since(began) > 5*time.Second {
			t.Fatalf("cancelled run: %s after %s (%s)", r.Status, time.Since(began), r.Error)
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationErrorLocked || cmp.Diff(inc0.State, inc.State) != "" {
			t.Errorf("after cancel: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != len(hist) {
			t.Errorf("a cancelled run added history")
		}
		// The souls were told to stop their sleep.
		waitFor(t, 5*time.Second, func() bool {
			for _, sid := range fleetSIDs {
				if !strings.Contains(f.souls[sid].out.String(), "keeper cancelled a task") {
					return false
				}
			}
			return true
		}, "every soul to be told of the cancel")
		if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "slow run cancelled on purpose"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("failure on one host locks until unlocked", func(t *testing.T) {
		inc0, hist := f.incarnation(), f.history()
		r := f.run("break", map[string]any{"host": "soul-b"}, false)
		if r.Status != store.RunFailed || r.Error == "" {
			t.Fatalf("break run: %s (%q)", r.Status, r.Error)
		}
		fail := hosts(r, "Fail on one host")
		if got := sortedKeys(fail); !slices.Equal(got, []string{"soul-b"}) || fail["soul-b"].Status != string(domain.StatusFailed) || !strings.Contains(fail["soul-b"].Msg, "planned failure on soul-b") {
			t.Errorf("failing task: %+v", fail)
		}
		if got := sortedKeys(hosts(r, "Touch a marker")); !slices.Equal(got, fleetSIDs) {
			t.Errorf("marker ran on %v", got)
		}
		if got := hosts(r, "Never reached"); len(got) != 0 {
			t.Errorf("a task after the failure ran: %+v", got)
		}
		for _, sid := range fleetSIDs {
			if f.file(sid, "srv/fleet/never") != "" {
				t.Errorf("the task after the failure wrote on %s", sid)
			}
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
			t.Fatalf("after the failure: status %s, active %q", inc.Status, inc.ActiveRun)
		}
		if d := cmp.Diff(inc0.State, inc.State); d != "" {
			t.Errorf("a failed run changed the state:\n%s", d)
		}
		if h := f.history(); len(h) != len(hist) || h[0].ID != hist[0].ID {
			t.Errorf("a failed run changed the history: %d snapshots, was %d", len(h), len(hist))
		}

		_, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "create"})
		if ae := apiError(t, err); ae.Status != 409 || !strings.Contains(ae.Message, "error_locked") {
			t.Fatalf("a run on an error_locked incarnation: %v", err)
		}
		if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, ""); apiError(t, err).Status != 400 {
			t.Fatalf("unlock without a reason: %v", err)
		}
		unlocked, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "soul-b checked by hand")
		if err != nil || unlocked.Status != store.IncarnationReady {
			t.Fatalf("unlock: %+v, %v", unlocked.Status, err)
		}
		audit, err := f.c.ListAudit(f.ctx, apiclient.AuditQuery{Action: "POST /v1/incarnations/{name}/unlock"})
		if err != nil {
			t.Fatal(err)
		}
		if len(audit) == 0 || audit[0].Target != fleetInc || !strings.Contains(runJSONAny(audit[0].Summary), "soul-b checked by hand") {
			t.Errorf("unlock audit: %+v", audit)
		}
		if r := f.run("create", map[string]any{"motd": "Hello"}, false); r.Status != store.RunSucceeded {
			t.Fatalf("create after unlock: %s (%s)", r.Status, r.Error)
		}
	})

	t.Run("unreachable host fails fast", func(t *testing.T) {
		inc0, hist := f.incarnation(), f.history()
		f.killSoul("soul-c")
		began := time.Now()
		acc, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "create", Input: map[string]any{"motd": "Hello"}})
		if err != nil {
			t.Fatal(err)
		}
		r := f.awaitRun(acc.ApplyID, 15*time.Second)
		took := time.Since(began)
		if r.Status != store.RunFailed || took > 10*time.Second {
			t.Fatalf("run with a dead soul: %s after %s (%s)", r.Status, took, r.Error)
		}
		if h := hosts(r, "Base directory")["soul-c"]; h.Status != string(domain.StatusUnreachable) {
			t.Errorf("dead soul's result: %+v\n%s", h, runJSON(r))
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationErrorLocked || cmp.Diff(inc0.State, inc.State) != "" {
			t.Errorf("after the unreachable host: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != len(hist) {
			t.Errorf("history grew to %d", len(h))
		}
		f.waitSouls(store.SoulDisconnected, "soul-c")
		t.Logf("the run with a dead soul failed in %s", took.Round(time.Millisecond))

		// Known disconnected by now: unreachable at once again.
		if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "soul-c is being replaced"); err != nil {
			t.Fatal(err)
		}
		began = time.Now()
		r = f.run("create", map[string]any{"motd": "Hello"}, false)
		if took := time.Since(began); r.Status != store.RunFailed || took > 10*time.Second || hosts(r, "Base directory")["soul-c"].Status != string(domain.StatusUnreachable) {
			t.Fatalf("run with a disconnected soul: %s after %s\n%s", r.Status, took, runJSON(r))
		}
		if got := sortedKeys(hosts(r, "Base directory")); !slices.Equal(got, fleetSIDs) {
			t.Errorf("first task's hosts %v", got)
		}
		if f.incarnation().Status != store.IncarnationErrorLocked {
			t.Errorf("not error_locked after the second run with a dead soul")
		}
	})
}

func runJSONAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRunsKeeperCrash SIGKILLs the real keeper binary in the middle of a
// run and starts it again on the same data and port: the run is aborted,
// the incarnation error_locked with nothing committed, and the souls
// reconnect by themselves and serve the next run.
func TestRunsKeeperCrash(t *testing.T) {
	backends(t, testKeeperCrash)
}

// awaitRun is a procedure waiting for a run given by its apply_id.
const awaitRun = `vars:
  apply_id:
    type: string
    visibility: public
steps:
  wait:
    action:
      apicall: "run show {{apply_id}}"
      parse:
        - filter: apply_id
          op: push
          var: "@deps"
`

// crashSleep is how long the run the keeper dies in sleeps on each soul.
const crashSleep = 5 * time.Second

func testKeeperCrash(t *testing.T, dbURL string) {
	f, serveArgs := binaryKeeper(t, dbURL)
	k := f.serveBinary(serveArgs)
	f.startSouls()
	f.registerFleet()
	f.createFleet()
	inc0, hist := f.incarnation(), f.history()

	acc, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "slow", Input: map[string]any{"stamp": "crash", "duration": crashSleep.String()}})
	if err != nil {
		t.Fatal(err)
	}
	// A Checker task waits for the run through @deps.
	if _, err := f.c.PutProcedure(f.ctx, "await_run", awaitRun); err != nil {
		t.Fatal(err)
	}
	exec, err := f.c.ExecuteProcedure(f.ctx, "await_run", map[string]any{"apply_id": acc.ApplyID})
	if err != nil {
		t.Fatal(err)
	}
	f.awaitSleep(acc.ApplyID)
	waitFor(t, 10*time.Second, func() bool {
		task, err := f.c.GetCheckerTask(f.ctx, exec.TaskIDs[0])
		return err == nil && task.Status == "RUNNING" && strings.Contains(taskLog(task), "waiting for 1 dependency")
	}, "the checker task to wait for the run")
	if err := k.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	k.wait(t, 10*time.Second)
	killed := time.Now()
	for _, sid := range fleetSIDs {
		if got := f.file(sid, "srv/fleet/stamp"); got != "crash\n" {
			t.Fatalf("%s stamp %q: the run did not get that far", sid, got)
		}
	}

	restarted := time.Now()
	f.serveBinary(serveArgs)
	r, err := f.c.GetRun(f.ctx, acc.ApplyID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunAborted || r.Error == "" || r.FinishedAt == nil {
		t.Fatalf("the run after the crash: %s (%q)", r.Status, r.Error)
	}
	inc := f.incarnation()
	if inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
		t.Fatalf("the incarnation after the crash: status %s, active %q", inc.Status, inc.ActiveRun)
	}
	if d := cmp.Diff(inc0.State, inc.State); d != "" || inc.State["stamp"] != nil {
		t.Errorf("the aborted run committed state (-before +after):\n%s", d)
	}
	if h := f.history(); len(h) != len(hist) || h[0].ID != hist[0].ID {
		t.Errorf("the aborted run changed the history: %d snapshots, was %d", len(h), len(hist))
	}
	if _, err := f.c.StartRun(f.ctx, fleetInc, apiclient.StartRunRequest{Scenario: "create"}); apiError(t, err).Status != 409 {
		t.Fatalf("a run before unlocking: %v", err)
	}
	// The Checker task that waited is failed, not left RUNNING.
	if task, err := f.c.GetCheckerTask(f.ctx, exec.TaskIDs[0]); err != nil || task.Status != "FAILURE" || !strings.Contains(task.RunError, "keeper stopped") {
		t.Errorf("the checker task after the crash: %s %q, %v", task.Status, task.RunError, err)
	}

	// The restarted keeper marked every soul disconnected; they come back
	// on their own (connected since the restart).
	waitFor(t, 20*time.Second, func() bool {
		for _, sid := range fleetSIDs {
			s, err := f.c.GetSoul(f.ctx, sid)
			if err != nil || s.Status != store.SoulConnected || s.LastSeen.Before(restarted) {
				return false
			}
		}
		return true
	}, "souls to reconnect to the restarted keeper")
	t.Logf("souls reconnected %s after the restart", time.Since(restarted).Round(time.Millisecond))
	if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "keeper crashed during slow; hosts checked"); err != nil {
		t.Fatal(err)
	}
	if r := f.run("create", map[string]any{"motd": "Hello"}, false); r.Status != store.RunSucceeded || len(hosts(r, "Probe the motd")) != 3 {
		t.Fatalf("create after the restart: %s (%s)\n%s", r.Status, r.Error, runJSON(r))
	}
	if inc := f.incarnation(); inc.Status != store.IncarnationReady {
		t.Fatalf("after the restart and a new run: %s", inc.Status)
	}

	// The souls finish their sleep and deliver its results late, to the
	// new keeper: they change nothing.
	time.Sleep(time.Until(killed.Add(crashSleep + time.Second)))
	if r, err := f.c.GetRun(f.ctx, acc.ApplyID); err != nil || r.Status != store.RunAborted {
		t.Errorf("the aborted run after its late results: %s, %v", r.Status, err)
	}
	if inc := f.incarnation(); inc.Status != store.IncarnationReady || cmp.Diff(helloState, inc.State) != "" {
		t.Errorf("late results of the aborted run changed the incarnation: %s %v", inc.Status, inc.State)
	}
}
