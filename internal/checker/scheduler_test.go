package checker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/checker/checkertest"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

const helloProc = `
vars:
  who:
    type: string
    visibility: public
steps:
  hello:
    action:
      log: "hello {{ who }}"
`

// schedEnv is a Checker on a manual clock with one schedule of helloProc.
func schedEnv(t *testing.T, cronExpr string, leader func() bool) (*env, *checkertest.FakeClock, store.Schedule, *testutil.Buffer) {
	t.Helper()
	clock := checkertest.NewFakeClock(t0, false)
	e := newEnv(t, Config{Clock: clock, IsLeader: leader})
	e.put("hello", helloProc)
	sc, err := e.c.AddSchedule(context.Background(), "hello", map[string]any{"who": "cron"}, cronExpr, e.owner())
	if err != nil {
		t.Fatal(err)
	}
	return e, clock, sc, &testutil.Buffer{}
}

func scheduledTasks(t *testing.T, s store.Store, scheduleID string) []store.CheckerTask {
	t.Helper()
	all, err := s.ListCheckerTasks(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.CheckerTask
	for _, x := range all {
		if x.ScheduleID == scheduleID {
			out = append(out, x)
		}
	}
	return out
}

func TestSchedulerFiresOnTimeAndNotTwiceAfterRestart(t *testing.T) {
	e, clock, sc, logs := schedEnv(t, "*/5 * * * *", nil)
	ctx, cancel := context.WithCancel(context.Background())
	s1 := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	done := make(chan error, 1)
	go func() { done <- s1.Run(ctx) }()

	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 0 {
		t.Fatalf("%d tasks before the first tick", len(got))
	}
	clock.Advance(4*time.Minute + 30*time.Second) // 12:05:00
	deadline := time.Now().Add(10 * time.Second)
	var got []store.CheckerTask
	for len(got) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		got = scheduledTasks(t, e.store, sc.ID)
	}
	if len(got) != 1 {
		t.Fatalf("%d tasks after the 12:05 tick, want 1\n%s", len(got), logs)
	}
	if want := time.Date(2025, 3, 1, 12, 5, 0, 0, time.UTC); !got[0].CreatedAt.Equal(want) {
		t.Errorf("task created at %s, want %s", got[0].CreatedAt, want)
	}
	// The task's row is stored just before the Checker starts it, so Wait
	// (which waits for tasks running here) may not know it yet: wait for
	// the stored task to end.
	var ended store.CheckerTask
	testutil.WaitFor(t, 10*time.Second, func() bool {
		var err error
		ended, err = e.store.GetCheckerTask(ctx, got[0].ID)
		return err == nil && IsTerminal(ended.Status)
	}, "the scheduled task to end")
	if ended.Status != StatusSuccess || ended.Vars["who"] != "cron" {
		t.Errorf("scheduled task: %+v", ended)
	}
	cancel()
	<-done

	// A restarted keeper (new Checker and Scheduler on the same store) ten
	// seconds after the 12:05 tick does not run it again: it passed before
	// this keeper led, and it ran (nothing to report missed).
	c2, err := New(Config{Store: e.store, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	logs2 := &testutil.Buffer{}
	s2 := NewScheduler(c2, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs2, nil))})
	s2.check(context.Background(), t0.Add(4*time.Minute+40*time.Second))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Fatalf("%d tasks after the restart, want still 1", len(got))
	}
	if strings.Contains(logs2.String(), "missed") {
		t.Errorf("the 12:05 tick ran before the restart; the log reports it missed:\n%s", logs2)
	}
	// Two schedulers that both believe they lead at the next tick (a
	// leader change): the store's claim lets one of them run it.
	s3 := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs2, nil))})
	s3.check(context.Background(), t0.Add(4*time.Minute+50*time.Second))
	// The next tick runs on the new keeper, once.
	s2.check(context.Background(), t0.Add(9*time.Minute+30*time.Second))
	s3.check(context.Background(), t0.Add(9*time.Minute+30*time.Second))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 2 {
		t.Errorf("%d tasks after 12:10, want 2", len(got))
	}
	if !strings.Contains(logs2.String(), "tick already claimed") {
		t.Errorf("the second scheduler did not find the 12:10 tick claimed:\n%s", logs2)
	}
}

func TestSchedulerTwoLeadersRunATickOnce(t *testing.T) {
	e, _, sc, logs := schedEnv(t, "*/5 * * * *", nil)
	c2, err := New(Config{Store: e.store, Clock: e.c.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	log := slog.New(slog.NewTextHandler(logs, nil))
	a, b := NewScheduler(e.c, SchedulerConfig{Logger: log}), NewScheduler(c2, SchedulerConfig{Logger: log})
	// Both lead since before the tick (a partitioned old leader and the
	// new one).
	for _, s := range []*Scheduler{a, b} {
		s.check(context.Background(), time.Date(2025, 3, 1, 12, 4, 59, 0, time.UTC))
	}
	at := time.Date(2025, 3, 1, 12, 5, 1, 0, time.UTC)
	var wg sync.WaitGroup
	for _, s := range []*Scheduler{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.check(context.Background(), at)
		}()
	}
	wg.Wait()
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Errorf("%d tasks, want 1\n%s", len(got), logs)
	}
}

func TestSchedulerMissedTicksAreLoggedNotReplayed(t *testing.T) {
	e, _, sc, logs := schedEnv(t, "*/5 * * * *", nil)
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	// The keeper comes up at 13:00:10: the 12:05 … 13:00 ticks were missed
	// and none runs late, not even the 13:00 one ten seconds ago.
	s.check(context.Background(), time.Date(2025, 3, 1, 13, 0, 10, 0, time.UTC))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 0 {
		t.Fatalf("%d tasks, want none (every tick passed before the keeper led)", len(got))
	}
	if !strings.Contains(logs.String(), "ticks missed while no leader was running") || !strings.Contains(logs.String(), "missed=12") {
		t.Errorf("log does not report the 12 missed ticks:\n%s", logs)
	}
	s.check(context.Background(), time.Date(2025, 3, 1, 13, 5, 0, 0, time.UTC))
	got := scheduledTasks(t, e.store, sc.ID)
	if len(got) != 1 {
		t.Fatalf("%d tasks, want 1 (13:05, on time)", len(got))
	}
	if _, err := e.c.Wait(context.Background(), got[0].ID); err != nil {
		t.Fatal(err)
	}
	// The keeper stalls for 20 minutes: the stale ticks are not replayed.
	s.check(context.Background(), time.Date(2025, 3, 1, 13, 25, 0, 0, time.UTC))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 2 {
		t.Errorf("%d tasks, want 2 (13:05 and 13:25)", len(got))
	}
	if !strings.Contains(logs.String(), "ticks missed, not replayed") || !strings.Contains(logs.String(), "missed=3") {
		t.Errorf("log does not report the 3 skipped ticks:\n%s", logs)
	}
}

func TestSchedulerSkipsOverlappingRun(t *testing.T) {
	clock := checkertest.NewFakeClock(t0, false)
	e := newEnv(t, Config{Clock: clock})
	e.put("slow", `
steps:
  wait:
    conditions:
      - const: 1
        expect:
          - {filter: "@", op: "==", value: 2}
        attempts: {max: 100, interval: 60}
`)
	sc, err := e.c.AddSchedule(context.Background(), "slow", nil, "* * * * *", e.owner())
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s.check(context.Background(), time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC))
	// The task sleeps on the manual clock between attempts: still running.
	if err := clock.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	s.check(context.Background(), time.Date(2025, 3, 1, 12, 2, 0, 0, time.UTC))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Fatalf("%d tasks, want 1", len(got))
	}
	if !strings.Contains(logs.String(), "previous run still going; tick skipped") {
		t.Errorf("log:\n%s", logs)
	}
}

func TestSchedulerRunsOnlyOnTheLeader(t *testing.T) {
	leader := false
	e, _, sc, logs := schedEnv(t, "*/5 * * * *", func() bool { return leader })
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s.check(context.Background(), time.Date(2025, 3, 1, 12, 5, 0, 0, time.UTC))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 0 {
		t.Fatalf("a follower started %d tasks", len(got))
	}
	leader = true
	s.check(context.Background(), time.Date(2025, 3, 1, 12, 10, 0, 0, time.UTC))
	if got := scheduledTasks(t, e.store, sc.ID); len(got) != 1 {
		t.Errorf("%d tasks once leader, want 1", len(got))
	}
}

func TestAddScheduleValidates(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("hello", helloProc)
	e.put("secret", "vars:\n  key:\n    type: string\nsteps:\n  s:\n    action:\n      log: \"{{ key }}\"\n")
	tests := []struct {
		name, proc, cron string
		vars             map[string]any
		want             domain.Code
	}{
		{"bad cron", "hello", "every five minutes", map[string]any{"who": "x"}, domain.CodeInvalid},
		{"unknown procedure", "nope", "*/5 * * * *", nil, domain.CodeNotFound},
		{"private var", "secret", "*/5 * * * *", map[string]any{"key": "x"}, domain.CodeInvalid},
		{"missing public var", "hello", "*/5 * * * *", nil, domain.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.c.AddSchedule(context.Background(), tt.proc, tt.vars, tt.cron, e.owner())
			if got := domain.ErrorCode(err); got != tt.want {
				t.Errorf("code %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

// TestSchedulerStartsAtOnceOnLeadership: a follower's scheduler sleeps up
// to Reload between checks; gaining leadership wakes it at once (SPEC
// §13), so the first tick after the gain runs on time.
func TestSchedulerStartsAtOnceOnLeadership(t *testing.T) {
	var leading atomic.Bool
	e, clock, sc, logs := schedEnv(t, "* * * * *", leading.Load)
	wake := make(chan struct{}, 1)
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil)), Wake: wake, Reload: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	leading.Store(true)
	wake <- struct{}{}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "leading; schedule ticks from now on run here")
	}, "the scheduler to wake up leading (no clock advance)")
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second) // 12:01:00, the first tick after the gain
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(scheduledTasks(t, e.store, sc.ID)) == 1 }, "the 12:01 tick to run")
	if got := scheduledTasks(t, e.store, sc.ID)[0].CreatedAt; !got.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("tick task created at %s, want 12:01:00", got)
	}
}

// TestSchedulerNewScheduleKeepsItsFirstTick: a schedule created while the
// leader's scheduler sleeps (through this keeper or another one on the
// same database) is picked up within a second, so its first tick runs at
// its time, not when the scheduler happens to look again (it once slept
// 30 s and ran the tick up to 30 s late).
func TestSchedulerNewScheduleKeepsItsFirstTick(t *testing.T) {
	clock := checkertest.NewFakeClock(t0.Add(15*time.Second), false) // 12:00:45
	e := newEnv(t, Config{Clock: clock})
	e.put("hello", helloProc)
	logs := &testutil.Buffer{}
	s := NewScheduler(e.c, SchedulerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := clock.BlockUntil(ctx, 1); err != nil { // checked at 12:00:45: no schedules
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second) // 12:00:50
	sc, err := e.c.AddSchedule(ctx, "hello", map[string]any{"who": "cron"}, "* * * * *", e.owner())
	if err != nil {
		t.Fatal(err)
	}
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second) // 12:01:00, the schedule's first tick
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(scheduledTasks(t, e.store, sc.ID)) == 1 }, "the 12:01 tick to run\n%s", logs)
	if got, want := scheduledTasks(t, e.store, sc.ID)[0].CreatedAt, t0.Add(30*time.Second); !got.Equal(want) {
		t.Errorf("first tick's task created at %s, want %s", got, want)
	}
}
