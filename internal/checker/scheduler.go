package checker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// AddSchedule validates and stores a schedule owned by the Archon ownerID
// (its maker): the procedure must exist, the vars must be a valid launch
// (public, typed; fan-out allowed) and the cron expression a standard
// 5-field one (or a descriptor like @hourly). The schedule runs only while
// its owner is enabled, and the tasks it starts are audited under the
// owner (SPEC §10.2, audit M4).
func (c *Checker) AddSchedule(ctx context.Context, procedure string, vars map[string]any, cronExpr, ownerID string) (store.Schedule, error) {
	if ownerID == "" {
		return store.Schedule{}, domain.Errorf(domain.CodeInvalid, "a schedule needs an owner")
	}
	if _, err := ParseCron(cronExpr); err != nil {
		return store.Schedule{}, domain.Errorf(domain.CodeInvalid, "invalid cron expression %q: %v", cronExpr, err)
	}
	proc, err := c.LoadProcedure(ctx, procedure)
	if err != nil {
		return store.Schedule{}, err
	}
	if _, err := launchVars(proc, vars); err != nil {
		return store.Schedule{}, err
	}
	sc := store.Schedule{ID: uuid.NewString(), Procedure: procedure, Vars: vars, Cron: cronExpr, OwnerID: ownerID, CreatedAt: c.clock.Now()}
	if err := c.store.CreateSchedule(ctx, sc); err != nil {
		return store.Schedule{}, fmt.Errorf("creating schedule of %s: %w", procedure, err)
	}
	return sc, nil
}

// SchedulerConfig tunes a Scheduler.
type SchedulerConfig struct {
	// Grace is how late a tick that came while this keeper led may still
	// start (the scheduler stalled on a slow store, say). Older ticks are
	// logged as missed and not replayed. A tick whose time passed before
	// this keeper became the leader is never run here, however recent
	// (SPEC §13: missed while no leader was up, or run by the previous
	// leader). 0 = 1 minute.
	Grace time.Duration
	// Reload is the longest the Scheduler sleeps before re-reading the
	// schedules (new ones, deletions, leadership). It bounds how late the
	// first tick of a schedule created just before it may start: a
	// schedule can be created through any keeper, so the leader cannot
	// be told of it other than by looking. Reading the schedules is one
	// small query, run only on the leader. 0 = 1 s.
	Reload time.Duration
	Logger *slog.Logger // nil = the Checker's
	// Wake, when it receives, makes the Scheduler check at once: the keeper
	// signals it on gaining leadership, so the scheduler starts then, not at
	// its next Reload.
	Wake <-chan struct{}
	// OnMissed, when set, is told of every tick missed and not run (the
	// rules' schedule.missed event, SPEC §17); it must not block.
	OnMissed func(scheduleID, procedure string, tick time.Time)
}

// Scheduler starts the tasks of cron schedules on the leader keeper. Each
// tick is claimed in the store before it starts, so it runs at most once
// even across restarts and leader changes; ticks missed while no leader
// ran are logged and not replayed; a tick that comes while the previous
// run of the same schedule is still going is skipped and logged.
type Scheduler struct {
	c       *Checker
	grace   time.Duration
	reload  time.Duration
	log     *slog.Logger
	wake    <-chan struct{}
	since   time.Time            // when this keeper was first seen leading; zero while it does not
	last    map[string]time.Time // per schedule: ticks up to here were handled
	running map[string][]string  // per schedule: task ids of its latest run
	paused  map[string]bool      // per schedule: paused at the last check (logged once)
	missed  func(scheduleID, procedure string, tick time.Time)
}

// NewScheduler returns a Scheduler launching through c (with c's store,
// clock and leader check).
func NewScheduler(c *Checker, cfg SchedulerConfig) *Scheduler {
	s := &Scheduler{c: c, grace: cfg.Grace, reload: cfg.Reload, log: cfg.Logger, wake: cfg.Wake,
		last: map[string]time.Time{}, running: map[string][]string{}, paused: map[string]bool{}, missed: cfg.OnMissed}
	if s.grace <= 0 {
		s.grace = time.Minute
	}
	if s.reload <= 0 {
		s.reload = time.Second
	}
	if s.log == nil {
		s.log = c.log
	}
	return s
}

// Run checks the schedules at every tick (and at least every Reload, and
// whenever Wake receives) until ctx is done.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		now := s.c.clock.Now()
		next := s.check(ctx, now)
		sctx, cancel := context.WithCancel(ctx)
		woken := make(chan struct{})
		go func() {
			defer close(woken)
			select {
			case <-s.wake: // a nil Wake never receives
				cancel()
			case <-sctx.Done():
			}
		}()
		_ = s.c.clock.Sleep(sctx, next.Sub(now))
		cancel()
		<-woken
		if ctx.Err() != nil {
			return nil
		}
	}
}

// check starts the due ticks at now and returns when to check next.
func (s *Scheduler) check(ctx context.Context, now time.Time) time.Time {
	wake := now.Add(s.reload)
	if !s.c.isLeader() {
		// Ticks pass without us; when we lead, ticks from then on run.
		clear(s.last)
		s.since = time.Time{}
		return wake
	}
	if s.since.IsZero() {
		s.since = now
		s.log.Info("checker scheduler: leading; schedule ticks from now on run here", "since", now)
	}
	schedules, err := s.c.store.ListSchedules(ctx)
	if err != nil {
		s.log.Error("checker scheduler: listing schedules", "err", err)
		return wake
	}
	live := map[string]bool{}
	for _, sc := range schedules {
		live[sc.ID] = true
		if s.pause(sc, now) {
			continue
		}
		spec, err := ParseCron(sc.Cron)
		if err != nil {
			s.log.Error("checker scheduler: invalid cron expression", "schedule", sc.ID, "cron", sc.Cron, "err", err)
			continue
		}
		s.tick(ctx, sc, spec, now)
		if n := spec.Next(now); n.Before(wake) {
			wake = n
		}
	}
	for id := range s.last {
		if !live[id] {
			delete(s.last, id)
			delete(s.running, id)
			delete(s.paused, id)
		}
	}
	return wake
}

// pause reports whether sc is paused (its owner disabled, deleted or
// unknown: audit M4), logging when that changes. Ticks that pass while it
// is paused count as handled: a resumed schedule does not replay them.
func (s *Scheduler) pause(sc store.Schedule, now time.Time) bool {
	was := s.paused[sc.ID]
	s.paused[sc.ID] = sc.Paused
	switch {
	case sc.Paused && !was:
		s.log.Warn("checker scheduler: schedule paused", "schedule", sc.ID, "procedure", sc.Procedure, "reason", sc.PauseReason)
	case !sc.Paused && was:
		s.log.Info("checker scheduler: schedule resumed", "schedule", sc.ID, "procedure", sc.Procedure, "owner", sc.Owner)
	}
	if sc.Paused {
		s.last[sc.ID] = now
	}
	return sc.Paused
}

// tick handles schedule sc at now: it starts its latest due tick, if any.
func (s *Scheduler) tick(ctx context.Context, sc store.Schedule, spec cron.Schedule, now time.Time) {
	last, seen := s.last[sc.ID]
	if !seen {
		// A tick at or after since runs; those before were missed while
		// no leader was up (or ran on the previous leader): never run late.
		last = s.since.Add(-time.Nanosecond)
		if created := sc.CreatedAt.Truncate(time.Second); created.After(last) {
			last = created // cron.Next is after last: no tick before the schedule existed
		}
		s.logMissedWhileDown(ctx, sc, spec, s.since)
	}
	s.last[sc.ID] = now
	var due []time.Time
	for t := spec.Next(last); !t.After(now) && len(due) < 1000; t = spec.Next(t) {
		due = append(due, t)
	}
	if len(due) == 0 {
		return
	}
	latest := due[len(due)-1]
	if len(due) > 1 {
		s.log.Warn("checker scheduler: ticks missed, not replayed", "schedule", sc.ID, "procedure", sc.Procedure,
			"missed", len(due)-1, "first", due[0], "running", latest)
		s.c.metrics.tick("missed", len(due)-1)
		s.onMissed(sc, due[len(due)-2])
	}
	if now.Sub(latest) > s.grace {
		s.log.Warn("checker scheduler: tick missed, not replayed", "schedule", sc.ID, "procedure", sc.Procedure, "tick", latest)
		s.c.metrics.tick("missed", 1)
		s.onMissed(sc, latest)
		return
	}
	for _, id := range s.running[sc.ID] {
		if s.c.doneChan(id) != nil {
			s.log.Warn("checker scheduler: previous run still going; tick skipped", "schedule", sc.ID,
				"procedure", sc.Procedure, "tick", latest, "task", id)
			s.c.metrics.tick("skipped", 1)
			return
		}
	}
	ok, err := s.c.store.ClaimTick(ctx, sc.ID, latest)
	if err != nil {
		s.log.Error("checker scheduler: claiming tick", "schedule", sc.ID, "tick", latest, "err", err)
		return
	}
	if !ok {
		s.log.Info("checker scheduler: tick already claimed; not run again", "schedule", sc.ID, "procedure", sc.Procedure, "tick", latest)
		return
	}
	tasks, err := s.c.Execute(ctx, ExecRequest{Procedure: sc.Procedure, Vars: sc.Vars, ScheduleID: sc.ID, OnBehalfOf: sc.OwnerID})
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	s.running[sc.ID] = ids
	if err != nil {
		s.log.Error("checker scheduler: starting scheduled task", "schedule", sc.ID, "procedure", sc.Procedure, "tick", latest, "err", err)
		return
	}
	s.c.metrics.tick("run", 1)
	s.log.Info("checker scheduler: tick started", "schedule", sc.ID, "procedure", sc.Procedure, "tick", latest, "tasks", ids)
	// The tasks run on the owner's behalf: the audit log says so under
	// the owner, not under the Checker's own archon (audit M4).
	if err := s.c.store.AppendAudit(ctx, store.AuditEntry{
		Time: now, ArchonID: sc.OwnerID, Action: "checker.schedule.tick", Target: sc.ID,
		Summary: map[string]any{"procedure": sc.Procedure, "tick": latest.UTC().Format(time.RFC3339), "tasks": ids, "owner": sc.Owner},
	}); err != nil {
		s.log.Error("checker scheduler: auditing a scheduled start", "schedule", sc.ID, "err", err)
	}
}

// logMissedWhileDown logs the ticks between the schedule's last run (or
// creation) and since, when no leader was there to run them.
func (s *Scheduler) logMissedWhileDown(ctx context.Context, sc store.Schedule, spec cron.Schedule, since time.Time) {
	from := sc.CreatedAt
	tasks, err := s.c.store.ListCheckerTasks(ctx, sc.Procedure, 200)
	if err != nil {
		s.log.Error("checker scheduler: listing tasks", "procedure", sc.Procedure, "err", err)
		return
	}
	for _, t := range tasks { // newest first
		if t.ScheduleID == sc.ID {
			from = t.CreatedAt
			break
		}
	}
	n := 0
	var first time.Time
	for t := spec.Next(from); t.Before(since) && n < 100000; t = spec.Next(t) {
		if n == 0 {
			first = t
		}
		n++
	}
	if n > 0 {
		s.log.Warn("checker scheduler: ticks missed while no leader was running, not replayed", "schedule", sc.ID,
			"procedure", sc.Procedure, "missed", n, "first", first, "last_run_or_created", from)
		s.c.metrics.tick("missed", n)
		s.onMissed(sc, first)
	}
}

// onMissed reports a missed tick (the last of a run of missed ones).
func (s *Scheduler) onMissed(sc store.Schedule, tick time.Time) {
	if s.missed != nil {
		s.missed(sc.ID, sc.Procedure, tick)
	}
}
