package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

// runTiming is one run measured from the Archon's side — from sending the
// request to the engine reporting the run over — and split by the
// keeper's own timestamps. Phases are negative when unknown.
type runTiming struct {
	Total   time.Duration // request sent → run ended (the engine's Wait returns)
	Accept  time.Duration // request sent → 202 with the apply_id received
	Start   time.Duration // request sent → run marked running (started_at)
	Prepare time.Duration // running → first host's task started (soulprints, triggers, targeting, render)
	Hosts   time.Duration // first host started → last host finished: dispatch over the stream, the souls' work, results back
	Finish  time.Duration // last host finished → run ended: the last results written, state_changes, commit transaction
	// Record and Commit split Finish when the run's events were all seen
	// (a subscriber that lags behind a large wave is dropped by the
	// engine, which never blocks on it).
	Record  time.Duration // last host finished → its result written to the store (announced by its host event)
	Commit  time.Duration // → the run's done event (commit transaction included)
	Status  string
	Results int
}

// startFunc starts a run and returns its apply_id.
type startFunc func(ctx context.Context) (apitypes.Accepted, error)

// timeRun starts a run through the Operator API and measures it.
func (e *env) timeRun(ctx context.Context, start startFunc) (runTiming, error) {
	var rt runTiming
	t0 := time.Now()
	acc, err := start(ctx)
	if err != nil {
		return rt, err
	}
	rt.Accept = time.Since(t0)
	// The run executes in the keeper's engine; its host events are emitted
	// once their results are written, and its done event once it ended.
	events, stop := e.k.Engine().Subscribe(acc.ApplyID)
	defer stop()
	var recorded, done time.Time
	got := make(chan struct{})
	go func() {
		defer close(got)
		for ev := range events {
			switch ev.Type {
			case engine.EventHost:
				if ev.Time.After(recorded) {
					recorded = ev.Time
				}
			case engine.EventDone:
				done = ev.Time
			}
		}
	}()
	run, err := e.k.Engine().Wait(ctx, acc.ApplyID)
	end := time.Now()
	rt.Total = end.Sub(t0)
	if err != nil {
		return rt, err
	}
	<-got
	rt.Status = run.Status
	if run.Status != store.RunSucceeded {
		return rt, fmt.Errorf("run %s %s: %s", run.ID, run.Status, run.Error)
	}
	results, err := e.k.Store().ListResults(ctx, acc.ApplyID)
	if err != nil {
		return rt, err
	}
	rt.Results = len(results)
	rt.Start, rt.Prepare, rt.Hosts, rt.Finish, rt.Record, rt.Commit = -1, -1, -1, -1, -1, -1
	if run.StartedAt == nil || len(results) == 0 {
		return rt, nil
	}
	first, last := results[0].StartedAt, results[0].FinishedAt
	for _, r := range results {
		if r.StartedAt.Before(first) {
			first = r.StartedAt
		}
		if r.FinishedAt.After(last) {
			last = r.FinishedAt
		}
	}
	rt.Start = run.StartedAt.Sub(t0)
	rt.Prepare = first.Sub(*run.StartedAt)
	rt.Hosts = last.Sub(first)
	rt.Finish = end.Sub(last)
	if !done.IsZero() && !recorded.IsZero() {
		rt.Record = recorded.Sub(last)
		rt.Commit = done.Sub(recorded)
	}
	return rt, nil
}

// runScenario is timeRun of POST /v1/incarnations/{inc}/runs.
func (e *env) runScenario(ctx context.Context, inc, scenario string, input map[string]any) (runTiming, error) {
	return e.timeRun(ctx, func(ctx context.Context) (apitypes.Accepted, error) {
		return e.c.StartRun(ctx, inc, apitypes.StartRunRequest{Scenario: scenario, Input: input})
	})
}

// createIncarnation is timeRun of POST /v1/incarnations (the create
// scenario over every soul carrying req.Covens).
func (e *env) createIncarnation(ctx context.Context, req apitypes.CreateIncarnationRequest) (runTiming, error) {
	return e.timeRun(ctx, func(ctx context.Context) (apitypes.Accepted, error) {
		return e.c.CreateIncarnation(ctx, req)
	})
}

// timings collects runTimings and summarizes each phase by its median.
type timings []runTiming

// median is the median of xs, -1 when there are none.
func median[T time.Duration | int64](xs []T) T {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (ts timings) median(f func(runTiming) time.Duration) time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		if d := f(t); d >= 0 {
			ds = append(ds, d)
		}
	}
	return median(ds)
}

func (ts timings) max(f func(runTiming) time.Duration) time.Duration {
	var m time.Duration = -1
	for _, t := range ts {
		m = max(m, f(t))
	}
	return m
}

// report adds the medians as benchmark metrics named prefix+phase.
func (ts timings) report(b interface{ ReportMetric(float64, string) }, prefix string) {
	phases := []struct {
		name string
		f    func(runTiming) time.Duration
	}{
		{"total", func(t runTiming) time.Duration { return t.Total }},
		{"accept", func(t runTiming) time.Duration { return t.Accept }},
		{"start", func(t runTiming) time.Duration { return t.Start }},
		{"prepare", func(t runTiming) time.Duration { return t.Prepare }},
		{"hosts", func(t runTiming) time.Duration { return t.Hosts }},
		{"finish", func(t runTiming) time.Duration { return t.Finish }},
		{"record", func(t runTiming) time.Duration { return t.Record }},
		{"commit", func(t runTiming) time.Duration { return t.Commit }},
	}
	for _, p := range phases {
		if m := ts.median(p.f); m >= 0 {
			b.ReportMetric(ms(m), prefix+p.name+"-ms")
		}
	}
	if len(ts) > 1 {
		b.ReportMetric(ms(ts.max(func(t runTiming) time.Duration { return t.Total })), prefix+"max-ms")
	}
}

// String is one line per run for -v logs.
func (t runTiming) String() string {
	split := "events dropped"
	if t.Record >= 0 {
		split = fmt.Sprintf("record %.1f, commit %.1f", ms(t.Record), ms(t.Commit))
	}
	return fmt.Sprintf("total %.1fms (accept %.1f, start %.1f, prepare %.1f, hosts %.1f, finish %.1f: %s) %d results",
		ms(t.Total), ms(t.Accept), ms(t.Start), ms(t.Prepare), ms(t.Hosts), ms(t.Finish), split, t.Results)
}
