package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	_ "github.com/soulstack/soulstack/internal/module/core"
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// runAgent runs an in-process agent until the test ends.
func runAgent(t testing.TB, cfg soul.Config) *soul.Agent {
	t.Helper()
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = 50*time.Millisecond, 300*time.Millisecond
	}
	if cfg.Facts == nil {
		cfg.Facts = func() (map[string]any, error) { return map[string]any{"os": map[string]any{"family": "debian"}}, nil }
	}
	a, err := soul.NewAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			t.Errorf("agent %s: %v", cfg.SID, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return a
}

// A changed soulprint reaches the store without a reconnect.
func TestSoulprintUpdate(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	var gen atomic.Int64
	runAgent(t, soul.Config{
		KeeperURL: k.url, SID: "shifty", DataDir: filepath.Join(dir, "shifty"), JoinToken: k.joinToken(t),
		FactsInterval: 50 * time.Millisecond,
		Facts: func() (map[string]any, error) {
			return map[string]any{"generation": gen.Load()}, nil
		},
	})
	k.waitConnected(t, "shifty")
	if got := k.soul(t, "shifty").Soulprint["generation"]; got != float64(0) {
		t.Fatalf("initial generation = %v", got)
	}
	gen.Store(7)
	testutil.WaitFor(t, 5*time.Second, func() bool {
		return k.soul(t, "shifty").Soulprint["generation"] == float64(7)
	}, "the soulprint update")
}

// A soul pinning another fingerprint never talks to the keeper.
func TestWrongFingerprintRefused(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	other, err := tlsutil.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherFP, _ := other.Fingerprint()
	logs := &testutil.Buffer{}
	runAgent(t, soul.Config{
		KeeperURL: k.url, SID: "lost", DataDir: filepath.Join(dir, "lost"), Fingerprint: otherFP,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	testutil.WaitFor(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "pinned fingerprint") }, "a pinning failure")
	if _, err := k.store.GetSoul(context.Background(), "lost"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("soul with the wrong pin reached the store: %v", err)
	}
}

// A second dispatch to the same soul while the first is running works: the
// soul runs work concurrently.
func TestConcurrentWorkOnOneSoul(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	runAgent(t, soul.Config{KeeperURL: k.url, SID: "busy", DataDir: filepath.Join(dir, "busy"), JoinToken: k.joinToken(t)})
	k.waitConnected(t, "busy")
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := k.gw.Dispatch(context.Background(), calls([]string{"busy"}, fmt.Sprint("sleep", i), "core.test.sleep", map[string]any{"duration": "300ms"}, 10*time.Second), nil)
			if r := res["busy"]; r.Failed {
				t.Errorf("sleep %d = %+v", i, r)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Fatalf("5 sleeps of 300ms took %s: not concurrent", d)
	}
}

// FanOut bounds the requests of one Dispatch in flight; a task id already
// waiting on a soul is refused rather than confused with the first.
func TestFanOutAndDuplicateTask(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{fanOut: 2})
	tok := k.joinToken(t)
	sids := []string{"f1", "f2", "f3", "f4"}
	for _, sid := range sids {
		runAgent(t, soul.Config{KeeperURL: k.url, SID: sid, DataDir: filepath.Join(dir, sid), JoinToken: tok})
	}
	k.waitConnected(t, sids...)
	start := time.Now()
	res := k.gw.Dispatch(context.Background(), calls(sids, "sleep", "core.test.sleep", map[string]any{"duration": "300ms"}, 10*time.Second), nil)
	elapsed := time.Since(start)
	for _, sid := range sids {
		if r := res[sid]; r.Failed {
			t.Fatalf("sleep on %s = %+v", sid, r)
		}
	}
	if elapsed < 600*time.Millisecond {
		t.Fatalf("4 sleeps of 300ms with fan-out 2 took %s: not bounded", elapsed)
	}

	// The same task id twice on one soul: the second is refused.
	req := calls([]string{"f1"}, "dup", "core.test.sleep", map[string]any{"duration": "300ms"}, 10*time.Second)[0]
	var wg sync.WaitGroup
	var first domain.Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		first = k.gw.Dispatch(context.Background(), []dispatch.Request{req}, nil)["f1"]
	}()
	time.Sleep(100 * time.Millisecond)
	second := k.gw.Dispatch(context.Background(), []dispatch.Request{req}, nil)["f1"]
	wg.Wait()
	if first.Failed || !second.Failed || !strings.Contains(second.Msg, "already running") {
		t.Fatalf("first = %+v, second = %+v", first, second)
	}
}

// A swarm's souls dial from their own source addresses (the keeper sees
// each as its own peer, as it sees a fleet's hosts) and say hello only
// when a handshake slot is free; the slot comes back after the welcome.
func TestAgentSourceAddressAndHandshakeSlots(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	token := k.joinToken(t)
	slots := make(chan struct{}, 1)
	slots <- struct{}{} // taken: nobody may say hello yet
	for i, sid := range []string{"src-a", "src-b"} {
		runAgent(t, soul.Config{
			KeeperURL: k.url, SID: sid, DataDir: filepath.Join(dir, sid), JoinToken: token,
			LocalAddr: netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + i)}), Handshakes: slots,
		})
	}
	time.Sleep(500 * time.Millisecond)
	if k.gw.Connected("src-a") || k.gw.Connected("src-b") {
		t.Fatal("a soul said hello while every handshake slot was taken")
	}
	<-slots
	k.waitConnected(t, "src-a", "src-b")
	// The keeper counts a soul connected just before the soul reads its
	// welcome and gives the slot back.
	testutil.WaitFor(t, 5*time.Second, func() bool { return len(slots) == 0 }, "the handshake slot given back")
	for sid, peer := range map[string]string{"src-a": "peer=127.0.0.2:", "src-b": "peer=127.0.0.3:"} {
		if line := k.connectedLine(t, sid); !strings.Contains(line, peer) {
			t.Errorf("soul %s connected as %q, want %s", sid, line, peer)
		}
	}
}

// A stopping keeper records every soul it held disconnected (in one store
// transaction), keeping each one's last seen.
func TestShutdownMarksSoulsDisconnected(t *testing.T) {
	for _, noLean := range []bool{false, true} {
		t.Run(map[bool]string{false: "lean", true: "h2"}[noLean], func(t *testing.T) { testShutdownMarksSoulsDisconnected(t, noLean) })
	}
}

func testShutdownMarksSoulsDisconnected(t *testing.T, noLean bool) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{noLean: noLean})
	token := k.joinToken(t)
	sids := []string{"bye-a", "bye-b", "bye-c"}
	for _, sid := range sids {
		runAgent(t, soul.Config{KeeperURL: k.url, SID: sid, DataDir: filepath.Join(dir, sid), JoinToken: token})
	}
	k.waitConnected(t, sids...)
	connected := time.Now()
	k.stop()
	stopped := time.Now()
	st, err := sqlite.Open(context.Background(), filepath.Join(k.dir, "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, sid := range sids {
		s, err := st.GetSoul(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != store.SoulDisconnected || s.KeeperID != "keeper-1" || s.LastSeen.After(stopped) || s.LastSeen.Before(connected.Add(-time.Minute)) {
			t.Errorf("%s after the keeper stopped: %s, keeper %q, last seen %v (connected by %v)", sid, s.Status, s.KeeperID, s.LastSeen, connected)
		}
	}
}

// retryLog records the retry_in of each "pending" record an agent logs.
type retryLog struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *retryLog) Enabled(context.Context, slog.Level) bool { return true }
func (r *retryLog) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *retryLog) WithGroup(string) slog.Handler            { return r }
func (r *retryLog) Handle(_ context.Context, rec slog.Record) error {
	if !strings.Contains(rec.Message, "pending") {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "retry_in" {
			r.mu.Lock()
			r.delays = append(r.delays, a.Value.Duration())
			r.mu.Unlock()
		}
		return true
	})
	return nil
}

func (r *retryLog) snapshot() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.delays...)
}

// A pending soul says hello again at a short fixed interval, however long
// it has waited, so an accepted soul connects within that interval
// instead of after a reconnect backoff grown while it waited (found: up
// to ~13 s late). The delays are read from the agent's own log, not timed.
func TestPendingSoulPollsAtAFixedInterval(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	rl := &retryLog{}
	const interval = 20 * time.Millisecond
	runAgent(t, soul.Config{
		KeeperURL: k.url, SID: "patient", DataDir: filepath.Join(dir, "patient"), Fingerprint: k.fp,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: time.Hour, PendingInterval: interval,
		Logger: slog.New(rl),
	})
	testutil.WaitFor(t, 30*time.Second, func() bool { return len(rl.snapshot()) >= 10 }, "ten pending hellos")
	for i, d := range rl.snapshot() {
		if d != interval {
			t.Fatalf("pending hello %d: retry in %s, want the fixed %s (all: %v)", i+1, d, interval, rl.snapshot())
		}
	}
	if err := k.store.AcceptSoul(context.Background(), "patient", nil, k.soul(t, "patient").PublicKey); err != nil {
		t.Fatal(err)
	}
	k.waitConnected(t, "patient")
}
