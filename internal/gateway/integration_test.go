package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// The acceptance scenario: three real souls onboard three ways,
// their soulprints are stored, ping and exec reach the accepted ones, and a
// killed soul turns disconnected and unreachable at once.
func TestOnboardDispatchAndKill(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	ctx := context.Background()

	// Joined with a token: accepted at once with the token's covens.
	a := startSoul(t, k, "alpha", filepath.Join(dir, "alpha"), "--join-token", k.joinToken(t, "web", "prod"))
	// No token: pending until an Archon accepts it.
	startSoul(t, k, "beta", filepath.Join(dir, "beta"), "--fingerprint", k.fp)
	// No token: pending, then rejected.
	c := startSoul(t, k, "gamma", filepath.Join(dir, "gamma"), "--fingerprint", k.fp)

	k.waitConnected(t, "alpha")
	if got := k.soul(t, "alpha"); !slices.Equal(got.Covens, []string{"prod", "web"}) || got.KeeperID != "keeper-1" || len(got.PublicKey) != 32 {
		t.Fatalf("alpha = %+v, want covens [prod web] on keeper-1 with its key", got)
	}

	k.waitStatus(t, "beta", store.SoulPending)
	k.waitStatus(t, "gamma", store.SoulPending)
	if k.gw.Connected("beta") {
		t.Fatal("pending soul beta holds a session")
	}
	// Accept beta as the API does.
	if err := k.store.SetSoulCovens(ctx, "beta", []string{"db"}); err != nil {
		t.Fatal(err)
	}
	if err := k.store.SetSoulStatus(ctx, "beta", store.SoulDisconnected, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	k.waitConnected(t, "beta")

	if err := k.store.SetSoulStatus(ctx, "gamma", store.SoulRejected, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	c.Wait(10 * time.Second)
	if !strings.Contains(c.Output(), "rejected") {
		t.Fatalf("gamma's output does not say it was rejected:\n%s", c.Output())
	}
	if got := k.soul(t, "gamma").Status; got != store.SoulRejected {
		t.Fatalf("gamma status = %s", got)
	}

	for _, sid := range []string{"alpha", "beta"} {
		sp := k.soul(t, sid).Soulprint
		if sp["sid"] != sid || sp["os"] == nil || sp["hostname"] == nil {
			t.Fatalf("soulprint of %s = %v", sid, sp)
		}
	}
	if got := k.gw.ConnectedSIDs(); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("ConnectedSIDs = %v", got)
	}

	all := []string{"alpha", "beta", "gamma"}
	var mu sync.Mutex
	var seen []string
	res := k.gw.Dispatch(ctx, calls(all, "ping", "core.test.ping", nil, 10*time.Second), func(sid string, _ domain.Result) {
		mu.Lock()
		seen = append(seen, sid)
		mu.Unlock()
	})
	slices.Sort(seen)
	if !slices.Equal(seen, all) {
		t.Fatalf("onResult saw %v", seen)
	}
	for _, sid := range []string{"alpha", "beta"} {
		if r := res[sid]; r.Status() != domain.StatusOK || r.Stdout != "pong" {
			t.Errorf("ping %s = %+v", sid, r)
		}
	}
	if r := res["gamma"]; !r.Unreachable {
		t.Errorf("ping gamma = %+v, want unreachable", r)
	}

	res = k.gw.Dispatch(ctx, calls(all[:2], "exec", "core.exec.run", map[string]any{"command": "echo hi | tr a-z A-Z"}, 10*time.Second), nil)
	for _, sid := range all[:2] {
		if r := res[sid]; r.Failed || r.RC != 0 || strings.TrimSpace(r.Stdout) != "HI" {
			t.Errorf("exec on %s = %+v", sid, r)
		}
	}

	a.Kill()
	k.waitStatus(t, "alpha", store.SoulDisconnected)
	if k.gw.Connected("alpha") {
		t.Fatal("killed soul still connected")
	}
	start := time.Now()
	res = k.gw.Dispatch(ctx, calls(all[:2], "ping2", "core.test.ping", nil, time.Minute), nil)
	if r := res["alpha"]; !r.Unreachable {
		t.Fatalf("ping killed alpha = %+v, want unreachable", r)
	}
	if r := res["beta"]; r.Status() != domain.StatusOK {
		t.Fatalf("ping beta = %+v", r)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("dispatch with an unreachable soul took %s", d)
	}
}

// A second key claiming an accepted SID is refused and audited; the bound
// soul keeps its session.
func TestKeySwapRefusedAndAudited(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	startSoul(t, k, "web-1", filepath.Join(dir, "orig"), "--join-token", k.joinToken(t, "web"))
	k.waitConnected(t, "web-1")
	key := k.soul(t, "web-1").PublicKey

	impostor := startSoul(t, k, "web-1", filepath.Join(dir, "impostor"), "--join-token", k.joinToken(t, "web"))
	impostor.Wait(10 * time.Second)
	if !strings.Contains(impostor.Output(), "bound to another key") {
		t.Fatalf("impostor output:\n%s", impostor.Output())
	}
	audit, err := k.store.ListAudit(context.Background(), store.AuditFilter{Action: "soul.key_mismatch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].Target != "web-1" || audit[0].Summary["presented_key"] == audit[0].Summary["bound_key"] {
		t.Fatalf("audit = %+v", audit)
	}
	if got := k.soul(t, "web-1"); string(got.PublicKey) != string(key) || got.Status != store.SoulConnected || !k.gw.Connected("web-1") {
		t.Fatalf("bound soul changed: %+v", got)
	}
}

// Timeout while connected fails the task and cancels it on the soul; a
// connection dropping mid-task makes it unreachable at once; cancelling the
// dispatch fails what is in flight.
func TestTimeoutDropAndCancel(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	tok := k.joinToken(t)
	startSoul(t, k, "slow", filepath.Join(dir, "slow"), "--join-token", tok)
	victim := startSoul(t, k, "victim", filepath.Join(dir, "victim"), "--join-token", tok)
	k.waitConnected(t, "slow", "victim")
	ctx := context.Background()
	sleep := map[string]any{"duration": "30s"}

	start := time.Now()
	res := k.gw.Dispatch(ctx, calls([]string{"slow"}, "timeout", "core.test.sleep", sleep, 500*time.Millisecond), nil)
	r := res["slow"]
	if !r.Failed || r.Unreachable || !strings.Contains(r.Msg, "timed out") {
		t.Fatalf("timed-out task = %+v", r)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %s", d)
	}

	go func() {
		time.Sleep(300 * time.Millisecond)
		victim.Kill()
	}()
	start = time.Now()
	res = k.gw.Dispatch(ctx, calls([]string{"victim", "slow"}, "drop", "core.test.sleep", map[string]any{"duration": "1s"}, time.Minute), nil)
	if r := res["victim"]; !r.Unreachable || !strings.Contains(r.Msg, "disconnected") {
		t.Fatalf("dropped soul's task = %+v", r)
	}
	if r := res["slow"]; r.Failed {
		t.Fatalf("other soul's task = %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("dispatch with a dropped soul took %s", d)
	}

	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	res = k.gw.Dispatch(cctx, calls([]string{"slow"}, "cancel", "core.test.sleep", sleep, time.Minute), nil)
	if r := res["slow"]; !r.Failed || !strings.Contains(r.Msg, "cancelled") {
		t.Fatalf("cancelled task = %+v", r)
	}
	// The soul got the cancel: its sleep ends at once, so a new task runs.
	res = k.gw.Dispatch(ctx, calls([]string{"slow"}, "after", "core.test.ping", nil, 10*time.Second), nil)
	if r := res["slow"]; r.Status() != domain.StatusOK {
		t.Fatalf("ping after cancel = %+v", r)
	}
}

// After a keeper restart the soul reconnects by itself; restarted without
// its token it reconnects through the fingerprint it pinned.
func TestReconnectAfterKeeperRestart(t *testing.T) {
	dir := t.TempDir()
	kdir := filepath.Join(dir, "keeper")
	k := startKeeper(t, kdir, keeperOpts{})
	p := startSoul(t, k, "phoenix", filepath.Join(dir, "phoenix"), "--join-token", k.joinToken(t, "a"))
	k.waitConnected(t, "phoenix")
	addr := k.addr
	k.stop()

	k2 := startKeeper(t, kdir, keeperOpts{addr: addr})
	k2.waitConnected(t, "phoenix")
	res := k2.gw.Dispatch(context.Background(), calls([]string{"phoenix"}, "ping", "core.test.ping", nil, 10*time.Second), nil)
	if r := res["phoenix"]; r.Status() != domain.StatusOK {
		t.Fatalf("ping after keeper restart = %+v", r)
	}

	p.Kill()
	k2.waitStatus(t, "phoenix", store.SoulDisconnected)
	startSoul(t, k2, "phoenix", filepath.Join(dir, "phoenix")) // no token, no fingerprint
	k2.waitConnected(t, "phoenix")
	if got := k2.soul(t, "phoenix").Covens; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("covens after restart = %v", got)
	}
}

// A keeper restarted mid-task loses the task (unreachable); the soul keeps
// the result it finished while disconnected and delivers it once after
// reconnecting, as a late result.
func TestResultKeptAcrossDisconnect(t *testing.T) {
	dir := t.TempDir()
	kdir := filepath.Join(dir, "keeper")
	k := startKeeper(t, kdir, keeperOpts{})
	startSoul(t, k, "keeper-of-results", filepath.Join(dir, "s"), "--join-token", k.joinToken(t))
	k.waitConnected(t, "keeper-of-results")

	done := make(chan domain.Result, 1)
	go func() {
		res := k.gw.Dispatch(context.Background(), calls([]string{"keeper-of-results"}, "long", "core.test.sleep", map[string]any{"duration": "1500ms"}, time.Minute), nil)
		done <- res["keeper-of-results"]
	}()
	time.Sleep(300 * time.Millisecond)
	addr := k.addr
	k.stop()
	if r := <-done; !r.Unreachable {
		t.Fatalf("task cut off by keeper stop = %+v", r)
	}

	var mu sync.Mutex
	var late []string
	k2 := startKeeper(t, kdir, keeperOpts{addr: addr, onLateResult: func(sid, runID, taskID string, r domain.Result) {
		mu.Lock()
		defer mu.Unlock()
		if !r.Failed && strings.Contains(r.Msg, "slept") {
			late = append(late, sid+" "+runID+" "+taskID)
		}
	}})
	k2.waitConnected(t, "keeper-of-results")
	testutil.WaitFor(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(late) > 0
	}, "the kept result")
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"keeper-of-results run-1 long/keeper-of-results"}; !slices.Equal(late, want) {
		t.Fatalf("late results = %v, want %v once", late, want)
	}
}

// The stream is refused over plain HTTP.
func TestPlainHTTPRefused(t *testing.T) {
	k := startKeeper(t, t.TempDir(), keeperOpts{})
	pattern, h := k.gw.Handler()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+pattern+"Connect", "application/grpc", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain HTTP status = %d, want 426", resp.StatusCode)
	}
}

// A soul that goes silent without closing its connection (stopped, or cut
// off) is disconnected after three missed heartbeats, and comes back when
// it resumes; last seen advances while it beats.
func TestSilentSoulDisconnected(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{heartbeat: 200 * time.Millisecond})
	p := startSoul(t, k, "sleepy", filepath.Join(dir, "sleepy"), "--join-token", k.joinToken(t))
	k.waitConnected(t, "sleepy")
	first := k.soul(t, "sleepy").LastSeen
	testutil.WaitFor(t, 5*time.Second, func() bool { return k.soul(t, "sleepy").LastSeen.After(first) }, "last seen to advance")

	if err := syscall.Kill(p.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	k.waitStatus(t, "sleepy", store.SoulDisconnected)
	res := k.gw.Dispatch(context.Background(), calls([]string{"sleepy"}, "ping", "core.test.ping", nil, time.Minute), nil)
	if r := res["sleepy"]; !r.Unreachable {
		t.Fatalf("ping of a silent soul = %+v", r)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	k.waitConnected(t, "sleepy")
}

// soul swarm runs N souls with their own keys, each confining file modules
// to its own root.
func TestSwarm(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	data := filepath.Join(dir, "swarm")
	cmd := exec.Command(soulBin, "swarm", "--keeper", k.url, "--join-token", k.joinToken(t, "swarm"), "--count", "5",
		"--data-dir", data, "--sid-prefix", "vs", "--reconnect-min", "50ms", "--reconnect-max", "300ms")
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("swarm output:\n%s", out)
		}
	}()
	sids := []string{"vs-0001", "vs-0002", "vs-0003", "vs-0004", "vs-0005"}
	k.waitConnected(t, sids...)
	keys := map[string]bool{}
	for _, sid := range sids {
		s := k.soul(t, sid)
		keys[string(s.PublicKey)] = true
		if s.Soulprint["sid"] != sid || !slices.Equal(s.Covens, []string{"swarm"}) {
			t.Fatalf("soul %s = %+v", sid, s)
		}
	}
	if len(keys) != len(sids) {
		t.Fatalf("%d distinct keys for %d souls", len(keys), len(sids))
	}
	res := k.gw.Dispatch(context.Background(), calls(sids, "file", "core.file.present",
		map[string]any{"path": "/etc/hello", "content": "hi\n", "makedirs": true}, 10*time.Second), nil)
	for _, sid := range sids {
		if r := res[sid]; r.Failed || !r.Changed {
			t.Fatalf("file.present on %s = %+v", sid, r)
		}
		if b, err := os.ReadFile(filepath.Join(data, sid, "root", "etc", "hello")); err != nil || string(b) != "hi\n" {
			t.Fatalf("%s's confined file: %q, %v", sid, b, err)
		}
	}
}

// A soul stopped (SIGTERM, as systemctl restart does) while a task runs:
// the keeper sees the host unreachable for that task every time, never the
// task's own failure raced in on the closing stream; the soul keeps that
// result and delivers it once after its next start, as a late result.
func TestSoulStoppedMidTaskReportsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	late := map[string]domain.Result{}
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{onLateResult: func(sid, runID, taskID string, r domain.Result) {
		mu.Lock()
		defer mu.Unlock()
		late[taskID] = r
	}})
	sdir := filepath.Join(dir, "s")
	s := startSoul(t, k, "stopped", sdir, "--join-token", k.joinToken(t))
	k.waitConnected(t, "stopped")

	for i := range 3 {
		task := "long" + strconv.Itoa(i)
		done := make(chan domain.Result, 1)
		go func() {
			// A sleep ends the moment it is cancelled: its result is ready
			// while the session is still closing.
			res := k.gw.Dispatch(context.Background(), calls([]string{"stopped"}, task, "core.test.sleep",
				map[string]any{"duration": "1m"}, 2*time.Minute), nil)
			done <- res["stopped"]
		}()
		testutil.WaitFor(t, 10*time.Second, func() bool {
			return regexp.MustCompile(`msg="task started" .*task_id=` + task + `/stopped `).MatchString(s.Output())
		}, "the task to start")
		if err := s.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if r := <-done; !r.Unreachable {
			t.Fatalf("stop %d: the task on the stopping soul = %+v, want unreachable", i, r)
		}
		if err := s.Wait(10 * time.Second); err != nil {
			t.Fatalf("stop %d: the soul did not stop: %v", i, err)
		}
		if !strings.Contains(s.Output(), "keeping a task's result until the next start") {
			t.Errorf("stop %d: the soul did not say it kept the result:\n%s", i, s.Output())
		}
		s = startSoul(t, k, "stopped", sdir)
		k.waitConnected(t, "stopped")
		testutil.WaitFor(t, 10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := late[task+"/stopped"]
			return ok
		}, "the kept result")
		mu.Lock()
		r := late[task+"/stopped"]
		mu.Unlock()
		if !r.Failed || r.Unreachable || !strings.Contains(r.Msg, "interrupted") {
			t.Errorf("stop %d: late result %+v, want the interrupted sleep", i, r)
		}
	}
}
