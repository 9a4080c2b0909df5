package keeper

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestLeaderStopsAtOnceWhenItsSessionEnds: when the database ends the
// leader's session (a server restart, pg_terminate_backend, a proxy that
// drops it), the lock is free for another keeper at once, so the leader
// must stop leading at once too — not at its next ping, up to a second
// later, while another keeper may already lead. Three times, so a ping
// that happens to fall just after the drop cannot pass for it. Before
// that, leadership holds steadily for a few pings.
func TestLeaderStopsAtOnceWhenItsSessionEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dbURL := pgtest.FreshDatabase(t)
	logs := &testutil.Buffer{}
	l, err := newLeader(nil, "keeper-1", dbURL, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); l.run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// Leading is steady: waiting on the connection between pings neither
	// breaks it nor drops the lock.
	testutil.WaitFor(t, 10*time.Second, l.IsLeader, "keeper-1 to lead")
	for held := time.Now(); time.Since(held) < 3500*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if !l.IsLeader() {
			t.Fatalf("keeper-1 stopped leading on its own after %s:\n%s", time.Since(held), logs)
		}
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("warnings while leading steadily:\n%s", logs)
	}
	for round := 1; round <= 3; round++ {
		testutil.WaitFor(t, 10*time.Second, l.IsLeader, "round %d: keeper-1 to lead", round)
		var ended bool
		if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1 AND datname = current_database()`, leaderApp("keeper-1")).Scan(&ended); err != nil || !ended {
			t.Fatalf("round %d: ending the leader's session: %v, %v", round, ended, err)
		}
		endedAt := time.Now()
		for l.IsLeader() {
			if time.Since(endedAt) > 250*time.Millisecond {
				t.Fatalf("round %d: still leading %s after the database ended the lock's session", round, time.Since(endedAt).Round(time.Millisecond))
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("round %d: stopped leading %s after its session ended", round, time.Since(endedAt).Round(time.Millisecond))
	}
}
