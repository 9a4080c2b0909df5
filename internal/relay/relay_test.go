package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/relay"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// fakeGateway stands for a keeper's soul gateway: the souls it holds
// answer at once with the keeper's id and the size of the work they got;
// blocking souls answer only when their work is cancelled.
type fakeGateway struct {
	keeper string

	mu        sync.Mutex
	connected map[string]bool
	blocking  map[string]bool
	got       []dispatch.Request
	causes    []error         // why blocked work ended
	gated     map[string]bool // souls that answer only once gate is closed
	gate      chan struct{}
	calls     int // Dispatch calls
}

func newFakeGateway(keeper string, sids ...string) *fakeGateway {
	g := &fakeGateway{keeper: keeper, connected: map[string]bool{}, blocking: map[string]bool{}, gated: map[string]bool{}, gate: make(chan struct{})}
	for _, sid := range sids {
		g.connected[sid] = true
	}
	return g
}

func (g *fakeGateway) Connected(sid string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.connected[sid]
}

func (g *fakeGateway) Disconnect(sid, _ string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	had := g.connected[sid]
	delete(g.connected, sid)
	return had
}

func (g *fakeGateway) Dispatch(ctx context.Context, reqs []dispatch.Request, onResult func(string, domain.Result)) map[string]domain.Result {
	out := map[string]domain.Result{}
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	for _, req := range reqs {
		g.mu.Lock()
		g.got = append(g.got, req)
		connected, blocking, gated := g.connected[req.SID], g.blocking[req.SID], g.gated[req.SID]
		g.mu.Unlock()
		if gated {
			<-g.gate
		}
		var res domain.Result
		switch {
		case !connected:
			res = domain.Result{Unreachable: true, RC: -1, Msg: fmt.Sprintf("soul %s is not connected to keeper %s", req.SID, g.keeper)}
		case blocking:
			<-ctx.Done()
			g.mu.Lock()
			g.causes = append(g.causes, context.Cause(ctx))
			g.mu.Unlock()
			res = domain.Result{Failed: true, RC: -1, Msg: "cancelled: " + context.Cause(ctx).Error()}
		default:
			b, _ := json.Marshal(req.Work)
			res = domain.Result{Changed: true, Stdout: "ran on " + req.SID + " via " + g.keeper,
				Data: map[string]any{"work_bytes": float64(len(b)), "timeout": req.Work.Timeout.String()}}
		}
		out[req.SID] = res
		if onResult != nil {
			onResult(req.SID, res)
		}
	}
	return out
}

func (g *fakeGateway) requests() []dispatch.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.got)
}

func (g *fakeGateway) cancelCauses() []error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.causes)
}

// keeper is one relay with its own store and fake gateway.
type keeper struct {
	id    string
	st    store.Store
	gw    *fakeGateway
	r     *relay.Relay
	stop  context.CancelFunc
	done  chan error
	stops sync.Once
}

// startKeeper opens a store on dbURL, recovers and runs a relay for
// keeper id until the test ends (or stopRun).
func startKeeper(t *testing.T, dbURL, id string, sids ...string) *keeper {
	t.Helper()
	k := newKeeper(t, dbURL, id, sids...)
	k.run(t)
	return k
}

func newKeeper(t *testing.T, dbURL, id string, sids ...string) *keeper {
	t.Helper()
	st, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := &keeper{id: id, st: st, gw: newFakeGateway(id, sids...)}
	k.r, err = relay.New(relay.Config{
		Store: st, Local: k.gw, KeeperID: id, DatabaseURL: dbURL,
		PollInterval: 200 * time.Millisecond, SealKey: testSealKey,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("keeper", id),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.r.Close() })
	for _, sid := range sids {
		connectSoul(t, st, sid, id)
	}
	return k
}

func (k *keeper) run(t *testing.T) {
	t.Helper()
	if err := k.r.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	k.stop, k.done = stop, make(chan error, 1)
	go func() { k.done <- k.r.Run(ctx) }()
	t.Cleanup(func() { k.stopRun(t) })
	waitFor(t, 10*time.Second, k.r.Listening, "keeper "+k.id+"'s relay to listen")
}

func (k *keeper) stopRun(t *testing.T) {
	k.stops.Do(func() {
		k.stop()
		if err := <-k.done; err != nil {
			t.Errorf("Run of %s: %v", k.id, err)
		}
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// connectSoul records sid connected to keeper id, as its gateway would.
func connectSoul(t *testing.T, st store.Store, sid, id string) {
	t.Helper()
	ctx := t.Context()
	if err := st.UpsertSoul(ctx, store.Soul{SID: sid, PublicKey: []byte("key"), Status: store.SoulConnected,
		KeeperID: id, LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func work(sid string, timeout time.Duration) dispatch.Work {
	return dispatch.Work{RunID: "run-1", TaskID: "run-1/1/" + sid + "/1", Task: "t", Timeout: timeout,
		Call: &dispatch.Call{Module: "core.test.echo", Params: map[string]any{"message": "hi"}}}
}

func dispatchOne(k *keeper, ctx context.Context, sid string, w dispatch.Work) domain.Result {
	return k.r.Dispatch(ctx, []dispatch.Request{{SID: sid, Work: w}}, nil)[sid]
}

// TestPassThrough: without a PostgreSQL URL the relay is the local gateway.
func TestPassThrough(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Even a soul the store says is held by another keeper goes to the
	// gateway: with one keeper there is nobody to relay to.
	connectSoul(t, st, "b", "k2")
	gw := newFakeGateway("k1", "a")
	r, err := relay.New(relay.Config{Store: st, Local: gw, KeeperID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Enabled() {
		t.Fatal("a relay without a database URL is enabled")
	}
	if err := r.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := r.Dispatch(t.Context(), []dispatch.Request{{SID: "a", Work: work("a", 0)}, {SID: "b", Work: work("b", 0)}}, nil)
	if !got["a"].Changed || !got["b"].Unreachable || len(gw.requests()) != 2 {
		t.Fatalf("pass-through: %+v, gateway got %d requests", got, len(gw.requests()))
	}
}

// TestRelay runs two keepers' relays on one database, each with a fake
// gateway: work crosses in both directions, mixed with local work, large
// payloads included; the unreachable, timeout, cancel and restart cases
// answer as a gateway would.
func TestRelay(t *testing.T) {
	dbURL := pgtest.FreshDatabase(t)
	k1 := startKeeper(t, dbURL, "k1", "a")
	k2 := startKeeper(t, dbURL, "k2", "b", "slow")
	k2.gw.mu.Lock()
	k2.gw.blocking["slow"] = true
	k2.gw.mu.Unlock()
	ctx := t.Context()

	t.Run("both ways and mixed", func(t *testing.T) {
		var mu sync.Mutex
		progress := map[string]bool{}
		got := k1.r.Dispatch(ctx, []dispatch.Request{{SID: "a", Work: work("a", time.Minute)}, {SID: "b", Work: work("b", time.Minute)}},
			func(sid string, r domain.Result) {
				mu.Lock()
				progress[sid] = r.Changed
				mu.Unlock()
			})
		if got["a"].Stdout != "ran on a via k1" || got["b"].Stdout != "ran on b via k2" || !progress["a"] || !progress["b"] {
			t.Fatalf("mixed dispatch: %+v, progress %v", got, progress)
		}
		if res := dispatchOne(k2, ctx, "a", work("a", time.Minute)); res.Stdout != "ran on a via k1" {
			t.Fatalf("k2 → a: %+v", res)
		}
		// The default timeout is filled in before relaying, so both keepers
		// bound the work alike.
		if res := dispatchOne(k1, ctx, "b", work("b", 0)); res.Data["timeout"] != relay.DefaultTaskTimeout.String() {
			t.Fatalf("relayed work's timeout: %+v", res)
		}
	})

	t.Run("large payload", func(t *testing.T) {
		w := work("b", time.Minute)
		files := map[string][]byte{"main.yml": []byte("tasks: []\n")}
		big := bytes.Repeat([]byte("relay me\n"), 200_000) // 1.8 MB
		files["templates/big.tmpl"] = big
		w.Call = nil
		w.Bundle = &dispatch.Bundle{Destiny: "site", Files: files, Input: map[string]any{"n": float64(1)}}
		res := dispatchOne(k1, ctx, "b", w)
		// Relayed results decode integers as int64 (dispatch.DecodeResult).
		if n, _ := res.Data["work_bytes"].(int64); !res.Changed || n < int64(len(big)) {
			t.Fatalf("large bundle: %+v", res)
		}
		reqs := k2.gw.requests()
		last := reqs[len(reqs)-1].Work
		if last.Bundle == nil || !bytes.Equal(last.Bundle.Files["templates/big.tmpl"], big) || last.RunID != "run-1" {
			t.Fatalf("the bundle did not cross intact")
		}
	})

	t.Run("soul not connected at the target", func(t *testing.T) {
		connectSoul(t, k1.st, "ghost", "k2") // stale: k2 holds no stream of it
		res := dispatchOne(k1, ctx, "ghost", work("ghost", time.Minute))
		if !res.Unreachable || res.Msg != "soul ghost is not connected to keeper k2" {
			t.Fatalf("soul gone from k2: %+v", res)
		}
	})

	t.Run("target keeper not running", func(t *testing.T) {
		connectSoul(t, k1.st, "orphan", "k9")
		began := time.Now()
		res := dispatchOne(k1, ctx, "orphan", work("orphan", time.Minute))
		if !res.Unreachable || !strings.Contains(res.Msg, "keeper k9, which is not running") || time.Since(began) > time.Second {
			t.Fatalf("soul of a keeper that is not running: %+v after %s", res, time.Since(began))
		}
	})

	t.Run("cancel reaches the target", func(t *testing.T) {
		cctx, cancel := context.WithCancelCause(ctx)
		done := make(chan domain.Result, 1)
		go func() { done <- dispatchOne(k1, cctx, "slow", work("slow", time.Minute)) }()
		waitFor(t, 5*time.Second, func() bool { return len(k2.gw.requests()) > 0 && last(k2.gw.requests()).SID == "slow" }, "the slow work to reach k2")
		cancel(errors.New("operator cancelled the run"))
		select {
		case res := <-done:
			if !res.Failed || res.Msg != "cancelled: operator cancelled the run" {
				t.Fatalf("cancelled relayed work: %+v", res)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a cancelled relayed dispatch did not return")
		}
		waitFor(t, 5*time.Second, func() bool { return len(k2.gw.cancelCauses()) == 1 }, "k2 to cancel the work")
		if c := k2.gw.cancelCauses()[0]; !strings.Contains(c.Error(), "gave up") {
			t.Errorf("k2 cancelled with cause %v", c)
		}
	})

	// I6: the work row holds rendered params (secret inputs included) and
	// the result row the unmasked result: both are sealed in PostgreSQL.
	t.Run("I6 relay rows hold no secret in clear", func(t *testing.T) {
		const secret = "pw=Hunter2-S3cr3t!"
		cctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		w := work("slow", time.Minute)
		w.Call = &dispatch.Call{Module: "core.test.echo", Params: map[string]any{"message": secret}}
		done := make(chan domain.Result, 1)
		go func() { done <- dispatchOne(k1, cctx, "slow", w) }()
		waitFor(t, 5*time.Second, func() bool {
			r := k2.gw.requests()
			return len(r) > 0 && last(r).Work.Call != nil && last(r).Work.Call.Params["message"] == secret
		}, "the secret-bearing work to reach k2 intact")
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var row []byte
		if err := conn.QueryRow(ctx, `SELECT work FROM relay_batches WHERE to_keeper = 'k2' ORDER BY id DESC LIMIT 1`).Scan(&row); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(row, []byte("Hunter2")) || !bytes.HasPrefix(row, []byte("SSR1")) {
			t.Fatalf("relay work row in clear: %.200q", row)
		}
		cancel(errors.New("cancelled with " + secret))
		if res := <-done; !strings.Contains(res.Msg, "cancelled") {
			t.Fatalf("cancelled work: %+v", res)
		}
	})

	t.Run("sender's own deadline", func(t *testing.T) {
		// k8 looks alive (its lock is held) but serves nothing: the sender
		// gives up after the timeout and both graces, failed.
		holdLock(t, dbURL, "k8")
		connectSoul(t, k1.st, "mute", "k8")
		began := time.Now()
		res := dispatchOne(k1, ctx, "mute", work("mute", 100*time.Millisecond))
		took := time.Since(began)
		if !res.Failed || res.Unreachable || !strings.Contains(res.Msg, "timed out") || took < 6*time.Second || took > 9*time.Second {
			t.Fatalf("work to a keeper that never answers: %+v after %s", res, took)
		}
		if rows, _ := k1.st.ListRelayBatches(ctx, store.RelayFilter{FromKeeper: "k1"}); len(rows) != 0 {
			t.Errorf("rows left behind: %+v", rows)
		}
	})

	t.Run("target keeper dies mid-wait", func(t *testing.T) {
		release := holdLock(t, dbURL, "k7")
		connectSoul(t, k1.st, "doomed", "k7")
		done := make(chan domain.Result, 1)
		go func() { done <- dispatchOne(k1, ctx, "doomed", work("doomed", time.Minute)) }()
		waitFor(t, 5*time.Second, func() bool {
			rows, _ := k1.st.ListRelayBatches(ctx, store.RelayFilter{ToKeeper: "k7"})
			return len(rows) == 1
		}, "the work to be relayed")
		release() // the keeper's connection goes away with its process
		select {
		case res := <-done:
			if !res.Unreachable || !strings.Contains(res.Msg, "keeper k7") {
				t.Fatalf("keeper died mid-wait: %+v", res)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("the sender did not notice the keeper died")
		}
	})

	t.Run("restart answers lost work unreachable", func(t *testing.T) {
		release := holdLock(t, dbURL, "k6")
		connectSoul(t, k1.st, "c", "k6")
		done := make(chan domain.Result, 1)
		go func() { done <- dispatchOne(k1, ctx, "c", work("c", time.Minute)) }()
		waitFor(t, 5*time.Second, func() bool {
			rows, _ := k1.st.ListRelayBatches(ctx, store.RelayFilter{ToKeeper: "k6"})
			return len(rows) == 1
		}, "the work to be relayed")
		// k6 restarts: its new process recovers before it listens.
		k6 := newKeeper(t, dbURL, "k6")
		if err := k6.r.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-done:
			if !res.Unreachable || !strings.Contains(res.Msg, "keeper k6 restarted") {
				t.Fatalf("work lost by a restart: %+v", res)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("the sender was not told of the restart")
		}
		release()
	})

	t.Run("shutdown answers served work unreachable", func(t *testing.T) {
		done := make(chan domain.Result, 1)
		n := len(k2.gw.requests())
		go func() { done <- dispatchOne(k1, ctx, "slow", work("slow", time.Minute)) }()
		waitFor(t, 5*time.Second, func() bool { return len(k2.gw.requests()) > n }, "the slow work to reach k2")
		k2.stopRun(t)
		select {
		case res := <-done:
			if !res.Unreachable || !strings.Contains(res.Msg, "shut down before the soul answered") {
				t.Fatalf("work on a keeper shutting down: %+v", res)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("the sender was not told of the shutdown")
		}
		// And k2 no longer runs: its souls are unreachable at once.
		if res := dispatchOne(k1, ctx, "b", work("b", time.Minute)); !res.Unreachable {
			t.Fatalf("soul of a stopped keeper: %+v", res)
		}
		if rows, _ := k1.st.ListRelayBatches(ctx, store.RelayFilter{}); len(rows) != 0 {
			t.Errorf("rows left behind: %+v", rows)
		}
	})
}

// holdLock makes keeper id look running: a session holds its relay lock
// until release (or the test's end).
func holdLock(t *testing.T, dbURL, id string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_lock($1)`, relay.LockKey(id)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { conn.Close(context.Background()) }) }
	t.Cleanup(release)
	return release
}

// TestRelayLatency measures the relay's own round trip (the fake gateway
// answers at once): one request at a time, then 100 at once.
func TestRelayLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("latency measurement")
	}
	dbURL := pgtest.FreshDatabase(t)
	k1 := startKeeper(t, dbURL, "k1")
	sids := make([]string, 100)
	for i := range sids {
		sids[i] = fmt.Sprintf("s%03d", i)
	}
	startKeeper(t, dbURL, "k2", sids...)
	ctx := t.Context()
	for range 20 { // warm the pools
		dispatchOne(k1, ctx, "s000", work("s000", time.Minute))
	}
	const n = 300
	lat := make([]time.Duration, 0, n)
	for range n {
		began := time.Now()
		if res := dispatchOne(k1, ctx, "s000", work("s000", time.Minute)); !res.Changed {
			t.Fatalf("relayed echo: %+v", res)
		}
		lat = append(lat, time.Since(began))
	}
	slices.Sort(lat)
	t.Logf("sequential relay round trip over %d requests: p50 %s, p90 %s, p99 %s, max %s",
		n, lat[n/2], lat[n*9/10], lat[n*99/100], lat[n-1])

	reqs := make([]dispatch.Request, len(sids))
	for i, sid := range sids {
		reqs[i] = dispatch.Request{SID: sid, Work: work(sid, time.Minute)}
	}
	for round := range 3 { // the first round opens the pools' connections
		began := time.Now()
		got := k1.r.Dispatch(ctx, reqs, nil)
		took := time.Since(began)
		for _, sid := range sids {
			if !got[sid].Changed {
				t.Fatalf("parallel relayed echo on %s: %+v", sid, got[sid])
			}
		}
		t.Logf("round %d: one Dispatch of %d relayed requests: %s (%.0f requests/s)", round, len(sids), took, float64(len(sids))/took.Seconds())
	}
}

func last[T any](s []T) T { return s[len(s)-1] }

func waitFor(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testSealKey is the relay seal key the test keepers share.
var testSealKey = []byte("0123456789abcdef0123456789abcdef")
