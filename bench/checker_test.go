package bench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store"
)

// probeBinding is the trivial external command of the Checker benchmark:
// `probe …` runs /bin/sh printing a fixed JSON document (the words after
// the prefix become ignored positional parameters).
var probeBinding = checker.Binding{
	Prefix:     "probe",
	Executable: "/bin/sh",
	Args:       []string{"-c", `printf '{"status":"ok","load":0.25}'`, "probe"},
}

// workProcedure is one of the 100 concurrent tasks: a condition polling
// the external binding until it held on 2 consecutive attempts 1 s apart,
// an action calling it again and parsing a value, then a const condition
// on that value, again held twice 1 s apart — about 2 s, three external
// calls and a dozen step-log writes per task.
const workProcedure = `
config:
  timeout: 120
vars:
  n:
    type: number
    visibility: public
  load:
    type: number
    default: 0
steps:
  probe:
    conditions:
      - apicall: "probe status --n {{n}}"
        expect:
          - filter: "status"
            op: "=="
            value: "ok"
        attempts:
          min: 2
          max: 5
          interval: 1
    action:
      apicall: "probe status --n {{n}}"
      parse:
        - filter: "load"
          op: store
          var: load
  settle:
    conditions:
      - const: "{{load}}"
        expect:
          - filter: "@"
            op: "<"
            value: 1
        attempts:
          min: 2
          max: 3
          interval: 1
    action:
      log: "task {{n}} settled at load {{load}}"
`

// tickProcedure is what the every-minute schedule runs.
const tickProcedure = `
steps:
  check:
    action:
      apicall: "probe status --tick yes"
`

// BenchmarkChecker is SPEC §15's Checker target: 100 concurrent procedure
// tasks ($SOULSTACK_BENCH_CHECKER_TASKS) kept in flight — each finished
// task is replaced at once — for a window of minutes
// ($SOULSTACK_BENCH_CHECKER_MINUTES, default 3), in the keeper on SQLite
// with its real scheduler and wall clock, while a schedule fires every
// minute ("* * * * *"). It reports task throughput, task durations, and
// each scheduled tick's lateness (the tick task's creation, and its start,
// after the minute it belongs to) and the ticks missed. The load starts
// after the schedule's first tick, so the window covers only steady-state
// ticks.
// One op is one whole window: use -benchtime 1x.
func BenchmarkChecker(b *testing.B) {
	concurrency := envInt(b, "SOULSTACK_BENCH_CHECKER_TASKS", 100)
	window := time.Duration(envInt(b, "SOULSTACK_BENCH_CHECKER_MINUTES", 3)) * time.Minute
	ctx := context.Background()
	e := startKeeper(b, func(k *config.Keeper) { k.Checker.Bindings = []checker.Binding{probeBinding} })
	for name, src := range map[string]string{"work": workProcedure, "tick": tickProcedure} {
		if _, err := e.c.PutProcedure(ctx, name, src); err != nil {
			b.Fatalf("procedure %s: %v", name, err)
		}
	}
	if _, err := e.c.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "tick", Cron: "* * * * *"}); err != nil {
		b.Fatal(err)
	}
	b.Logf("waiting for the schedule's first tick")
	first := e.waitTicks(ctx, 1, 3*time.Minute)

	for b.Loop() {
		from := time.Now()
		res := e.checkerLoad(ctx, b, concurrency, window)
		to := time.Now()
		ticks := e.ticksBetween(ctx, b, from, to)
		// Ticks due in the window: the minute boundaries after from (the
		// one at from's minute has passed unless from is exactly on it).
		due := 0
		for t := from.Truncate(time.Minute).Add(time.Minute); !t.After(to); t = t.Add(time.Minute) {
			due++
		}
		var created, started []time.Duration
		for _, t := range ticks {
			minute := t.CreatedAt.Truncate(time.Minute)
			created = append(created, t.CreatedAt.Sub(minute))
			if t.StartedAt != nil {
				started = append(started, t.StartedAt.Sub(minute))
			}
		}
		slices.Sort(created)
		b.Logf("first tick (before the load) created %s after its minute", first[0].CreatedAt.Sub(first[0].CreatedAt.Truncate(time.Minute)).Round(time.Millisecond))
		b.Logf("%d tasks (%d failed) in %s at %d in flight; %d external calls; task duration median %s, max %s; start delay median %s, max %s",
			res.done, res.failed, res.elapsed.Round(time.Millisecond), concurrency, res.calls,
			median(res.durations).Round(time.Millisecond), slices.Max(res.durations).Round(time.Millisecond),
			median(res.startDelays).Round(time.Millisecond), slices.Max(res.startDelays).Round(time.Millisecond))
		b.Logf("ticks due %d, ran %d; created after the minute: %v; started after the minute: %v", due, len(ticks), created, started)
		if res.failed > 0 {
			b.Errorf("%d tasks failed", res.failed)
		}
		b.ReportMetric(float64(res.done)/res.elapsed.Seconds(), "tasks/s")
		b.ReportMetric(float64(res.calls)/res.elapsed.Seconds(), "calls/s")
		b.ReportMetric(ms(median(res.durations)), "task-median-ms")
		b.ReportMetric(ms(median(res.startDelays)), "task-start-median-ms")
		b.ReportMetric(float64(due), "ticks-due")
		b.ReportMetric(float64(max(0, due-len(ticks))), "ticks-missed")
		if len(created) > 0 {
			b.ReportMetric(ms(slices.Max(created)), "tick-late-max-ms")
			b.ReportMetric(ms(median(created)), "tick-late-median-ms")
		}
		if len(started) > 0 {
			b.ReportMetric(ms(slices.Max(started)), "tick-start-late-max-ms")
		}
	}
}

// loadResult is what checkerLoad measured.
type loadResult struct {
	done, failed, calls int
	elapsed             time.Duration
	durations           []time.Duration // started → finished
	startDelays         []time.Duration // created → started
}

// checkerLoad keeps concurrency work tasks in flight for window: it starts
// them with one fan-out launch (a scalar var given an array), then replaces
// each finished task by a new one until the window ends, and waits for the
// last ones.
func (e *env) checkerLoad(ctx context.Context, b *testing.B, concurrency int, window time.Duration) loadResult {
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
		seq atomic.Int64
	)
	start := time.Now()
	deadline := start.Add(window)
	var follow func(id string)
	follow = func(id string) {
		defer wg.Done()
		t, err := e.k.Checker().Wait(ctx, id)
		if err != nil {
			b.Error(err)
			return
		}
		mu.Lock()
		res.done++
		if t.Status != checker.StatusSuccess {
			res.failed++
			if res.failed <= 3 {
				b.Logf("task %s ended %s: %s", t.ID, t.Status, t.RunError)
			}
		}
		res.calls += 3
		if t.StartedAt != nil && t.FinishedAt != nil {
			res.durations = append(res.durations, t.FinishedAt.Sub(*t.StartedAt))
			res.startDelays = append(res.startDelays, t.StartedAt.Sub(t.CreatedAt))
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			return
		}
		out, err := e.c.ExecuteProcedure(ctx, "work", map[string]any{"n": seq.Add(1)})
		if err != nil || len(out.TaskIDs) != 1 {
			b.Errorf("execute: %v %v", out.TaskIDs, err)
			return
		}
		wg.Add(1)
		go follow(out.TaskIDs[0])
	}
	ns := make([]any, concurrency)
	for i := range ns {
		ns[i] = seq.Add(1)
	}
	out, err := e.c.ExecuteProcedure(ctx, "work", map[string]any{"n": ns})
	if err != nil || len(out.TaskIDs) != concurrency {
		b.Fatalf("fan-out execute: %d tasks, %v", len(out.TaskIDs), err)
	}
	for _, id := range out.TaskIDs {
		wg.Add(1)
		go follow(id)
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// scheduledTicks lists the tick procedure's scheduled tasks.
func (e *env) scheduledTicks(ctx context.Context) ([]store.CheckerTask, error) {
	tasks, err := e.k.Store().ListCheckerTasks(ctx, "tick", 1000)
	if err != nil {
		return nil, err
	}
	var out []store.CheckerTask
	for _, t := range tasks {
		if t.ScheduleID != "" {
			out = append(out, t)
		}
	}
	return out, nil
}

// waitTicks waits until the schedule has run n ticks.
func (e *env) waitTicks(ctx context.Context, n int, within time.Duration) []store.CheckerTask {
	e.tb.Helper()
	deadline := time.Now().Add(within)
	for {
		ticks, err := e.scheduledTicks(ctx)
		if err != nil {
			e.tb.Fatal(err)
		}
		if len(ticks) >= n {
			return ticks
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("%d ticks after %s, want %d", len(ticks), within, n)
		}
		time.Sleep(time.Second)
	}
}

// ticksBetween returns the scheduled ticks whose minute lies in (from, to].
func (e *env) ticksBetween(ctx context.Context, b *testing.B, from, to time.Time) []store.CheckerTask {
	ticks, err := e.scheduledTicks(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var out []store.CheckerTask
	for _, t := range ticks {
		if m := t.CreatedAt.Truncate(time.Minute); m.After(from) && !m.After(to) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(x, y store.CheckerTask) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return out
}
