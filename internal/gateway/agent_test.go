package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	_ "github.com/soulstack/soulstack/internal/module/core"
	"github.com/soulstack/soulstack/internal/soul"
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
	waitFor(t, 5*time.Second, func() bool {
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
	logs := &syncBuffer{}
	runAgent(t, soul.Config{
		KeeperURL: k.url, SID: "lost", DataDir: filepath.Join(dir, "lost"), Fingerprint: otherFP,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	waitFor(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "pinned fingerprint") }, "a pinning failure")
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
