package checker

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/checker/checkertest"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestM4ScheduledTasksActForTheOwner: audit M4 — a scheduled task's
// commands, and those of the sub-procedure it launches, reach the
// Commander marked as acting for the schedule's owner (OnBehalfOf), which
// the keeper's Commander passes to the API; a task launched with no one
// named acts for no one.
func TestM4ScheduledTasksActForTheOwner(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	cmd := CommanderFunc(func(ctx context.Context, argv []string) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, argv[0]+"="+OnBehalfOf(ctx))
		return []any{}, nil
	})
	e := newEnv(t, Config{Clock: checkertest.NewFakeClock(t0, false), Commander: cmd})
	e.put("child", "steps:\n  s:\n    action:\n      apicall: \"souls list\"\n")
	e.put("parent", "steps:\n  s:\n    action:\n      apicall: [\"incarnation list\", \"checker procedure execute --name child\"]\n")
	sc, err := e.c.AddSchedule(context.Background(), "parent", nil, "*/5 * * * *", e.owner())
	if err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.DiscardHandler)})
	s.check(context.Background(), time.Date(2025, 3, 1, 12, 5, 0, 0, time.UTC))
	testutil.WaitFor(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 2
	}, "the scheduled task and its sub-procedure to call the commander")
	mu.Lock()
	got := slices.Sorted(slices.Values(seen))
	mu.Unlock()
	if want := []string{"incarnation=" + ownerID, "souls=" + ownerID}; !slices.Equal(got, want) {
		t.Fatalf("commands of schedule %s acted for %v, want %v", sc.ID, got, want)
	}

	mu.Lock()
	seen = nil
	mu.Unlock()
	tasks, err := e.c.Execute(context.Background(), ExecRequest{Procedure: "child"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Wait(context.Background(), tasks[0].ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"souls="}) {
		t.Fatalf("a task launched for no one acted for %v", seen)
	}
}
