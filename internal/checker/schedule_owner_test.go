package checker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// ownerID is the Archon owning the schedules of the scheduler tests.
const ownerID = "olga-id"

// owner creates the schedules' owner, an enabled operator, once.
func (e *env) owner() string {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.store.GetArchon(ctx, ownerID); err == nil {
		return ownerID
	}
	// A second admin lets the tests disable olga (never the last admin).
	for _, a := range []store.Archon{
		{ID: ownerID, Name: "olga", Role: store.RoleOperator, CreatedAt: t0},
		{ID: "root-id", Name: "root", Role: store.RoleAdmin, CreatedAt: t0},
	} {
		if err := e.store.CreateArchon(ctx, a); err != nil {
			e.t.Fatal(err)
		}
	}
	return ownerID
}

// TestM4DisabledOwnerPausesSchedule: audit M4 — a schedule made by an
// operator who is then disabled starts no task (paused, logged once); its
// ticks during the pause are not replayed when she is enabled again; the
// tasks it starts are audited under her, not under the Checker.
func TestM4DisabledOwnerPausesSchedule(t *testing.T) {
	e, _, sc, logs := schedEnv(t, "*/5 * * * *", nil)
	ctx := context.Background()
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	at := func(h, m int) time.Time { return time.Date(2025, 3, 1, h, m, 0, 0, time.UTC) }

	s.check(ctx, at(12, 5))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Fatalf("%d tasks at 12:05, want 1\n%s", len(got), logs)
	}
	// Let it end: a tick that comes while it still runs would be skipped.
	if _, err := e.c.Wait(ctx, scheduledTasks(t, e.store, sc.ID)[0].ID); err != nil {
		t.Fatal(err)
	}
	entries, err := e.store.ListAudit(ctx, store.AuditFilter{Action: "checker.schedule.tick"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ArchonID != ownerID || entries[0].Target != sc.ID {
		t.Fatalf("scheduled start audited as %+v, want under the owner %s", entries, ownerID)
	}

	if err := e.store.DisableArchon(ctx, ownerID, at(12, 6)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{10, 15, 20} {
		s.check(ctx, at(12, m))
	}
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Fatalf("%d tasks after the owner was disabled, want still 1", len(got))
	}
	if n := strings.Count(logs.String(), "schedule paused"); n != 1 {
		t.Errorf("pause logged %d times, want once:\n%s", n, logs)
	}
	list, err := e.store.ListSchedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !list[0].Paused || !strings.Contains(list[0].PauseReason, "olga") {
		t.Errorf("schedule list while paused: %+v", list[0])
	}

	// Enabled again: the next tick runs, the paused ones are not replayed.
	if err := e.store.EnableArchon(ctx, ownerID); err != nil {
		t.Fatal(err)
	}
	s.check(ctx, at(12, 22))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Fatalf("%d tasks right after resuming, want 1 (no replay)", len(got))
	}
	s.check(ctx, at(12, 25))
	testutil.WaitFor(t, 5*time.Second, func() bool { return len(scheduledTasks(t, e.store, sc.ID)) == 2 }, "the 12:25 tick")
}

// TestM4ScheduleNeedsAnOwner: a schedule without an owner is refused.
func TestM4ScheduleNeedsAnOwner(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("hello", helloProc)
	_, err := e.c.AddSchedule(context.Background(), "hello", map[string]any{"who": "x"}, "*/5 * * * *", "")
	if domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("AddSchedule without an owner: %v, want invalid", err)
	}
}
