package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/store"
)

// TestWatchTimeout: `run watch --timeout` stops following a run that does
// not end (exit 1, saying the run goes on and how to follow it again) and
// leaves the run as it was.
func TestWatchTimeout(t *testing.T) {
	k := startKeeper(t)
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "my-service")
	k.ctl(t, "service", "register", "--name", "my-service", "--git", repo.Dir, "--ref", "master").must(t)
	// A run no engine runs: recorded pending, it never ends by itself.
	run := store.Run{ID: "stuck-create", Scenario: "create"}
	if err := k.K.Store().CreateIncarnation(context.Background(), store.Incarnation{Name: "stuck", Service: "my-service",
		Ref: "master", Commit: strings.Repeat("ab", 20)}, run); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := k.ctl(t, "run", "watch", "stuck-create", "--timeout", "1s")
	took := time.Since(start)
	if res.Code != 1 || !strings.Contains(res.Stderr, "did not end within --timeout 1s") ||
		!strings.Contains(res.Stderr, "soulctl run watch stuck-create") {
		t.Fatalf("run watch --timeout 1s: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
	}
	if took < time.Second || took > 20*time.Second {
		t.Errorf("run watch --timeout 1s took %s", took)
	}
	got, err := k.K.Store().GetRun(context.Background(), "stuck-create")
	if err != nil || got.FinishedAt != nil {
		t.Errorf("the run after the timeout: %+v, %v; want it untouched", got, err)
	}
	// A wrong duration is a usage error.
	if res := k.ctl(t, "run", "watch", "stuck-create", "--timeout", "soon"); res.Code != 2 {
		t.Errorf("--timeout soon: exit %d, want 2\n%s", res.Code, res.Stderr)
	}
}
