package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// fiveService is the concurrency benchmark's service: create and work are
// the same five tasks (a directory, a file with the release, a rendered
// config, a ping, a removed file), which change every host whenever the
// release changes.
var fiveService = map[string]string{
	"service.yml":                         "name: five\ndescription: five tasks on every member (issue 23, concurrency)\n",
	"scenario/create/main.yml":            fiveTasks,
	"scenario/work/main.yml":              fiveTasks,
	"scenario/create/templates/conf.tmpl": fiveTemplate,
	"scenario/work/templates/conf.tmpl":   fiveTemplate,
}

const fiveTemplate = "host {{ .soulprint.self.sid }}\nrelease {{ .vars.release }}\n"

const fiveTasks = `
input:
  release:
    type: string
    default: "0"
state_changes:
  sets:
    release: "${ input.release }"
tasks:
  - name: directory
    module: core.file.directory
    params:
      path: "/srv/${ incarnation.name }"
  - name: release file
    module: core.file.present
    params:
      path: "/srv/${ incarnation.name }/release"
      content: "${ input.release }\n"
  - name: config
    module: core.file.rendered
    params:
      path: "/srv/${ incarnation.name }/app.conf"
      template: templates/conf.tmpl
      vars:
        release: "${ input.release }"
  - name: ping
    module: core.test.ping
  - name: no stale file
    module: core.file.absent
    params:
      path: "/srv/${ incarnation.name }/stale"
`

// BenchmarkConcurrency (issue 23): 100 incarnations of 10 souls each
// ($SOULSTACK_BENCH_INCS × $SOULSTACK_BENCH_PER_INC), all running the
// five-task scenario at once: per op every incarnation starts one run
// (with a new release, so every task changes every host) and the op ends
// when all of them committed. Reported: runs/s and results/s (the store's
// per-host result writes) over the op, the median and p99 run time
// (request → committed) over every run, and failures (must be 0). With
// SOULSTACK_BENCH_POSTGRES=1 the keeper uses a fresh PostgreSQL database
// of $SOULSTACK_TEST_DATABASE_URL's server instead of SQLite;
// $SOULSTACK_BENCH_CPUPROFILE profiles the keeper side during the ops.
func BenchmarkConcurrency(b *testing.B) {
	incs := envInt(b, "SOULSTACK_BENCH_INCS", 100)
	per := envInt(b, "SOULSTACK_BENCH_PER_INC", 10)
	ctx := context.Background()
	dbURL := ""
	if os.Getenv("SOULSTACK_BENCH_POSTGRES") == "1" {
		dbURL = pgtest.FreshDatabase(b)
	}
	e := startKeeper(b, func(k *config.Keeper) { k.DatabaseURL = dbURL })
	e.registerService("five", fiveService)
	e.startSwarm(incs*per, "c", "conc")
	// Each soul joins one incarnation's coven: c-0001..c-0010 → g000, …
	for i := range incs * per {
		sid := fmt.Sprintf("c-%04d", i+1)
		if _, err := e.c.SetSoulCovens(ctx, sid, []string{"conc", fmt.Sprintf("g%03d", i/per)}); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, incs)
	for i := range names {
		names[i] = fmt.Sprintf("inc-%03d", i)
	}
	if err := e.concurrentRuns(ctx, names, func(ctx context.Context, name string) (apitypes.Accepted, error) {
		return e.c.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: name, Service: "five",
			Covens: []string{"g" + name[len("inc-"):]}})
	}, nil); err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		if inc, err := e.c.GetIncarnation(ctx, name); err != nil || len(inc.Members) != per {
			b.Fatalf("incarnation %s: %d members, %v", name, len(inc.Members), err)
		}
	}
	if p := os.Getenv("SOULSTACK_BENCH_CPUPROFILE"); p != "" {
		defer startCPUProfile(b, p)()
	}
	var all []time.Duration
	var wall time.Duration
	failed, ops := 0, 0
	for b.Loop() {
		ops++
		release := fmt.Sprintf("r%d", ops)
		var durs []time.Duration
		t0 := time.Now()
		err := e.concurrentRuns(ctx, names, func(ctx context.Context, name string) (apitypes.Accepted, error) {
			return e.c.StartRun(ctx, name, apitypes.StartRunRequest{Scenario: "work", Input: map[string]any{"release": release}})
		}, &durs)
		wall += time.Since(t0)
		if err != nil {
			failed++
			b.Error(err)
		}
		all = append(all, durs...)
	}
	runs := float64(ops * incs)
	b.ReportMetric(runs/wall.Seconds(), "runs/s")
	b.ReportMetric(runs*float64(per*5)/wall.Seconds(), "results/s")
	b.ReportMetric(ms(median(all)), "run-median-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "run-p99-ms")
	b.ReportMetric(ms(slices.Max(all)), "run-max-ms")
	b.ReportMetric(float64(failed), "failed-ops")
	backend := "sqlite"
	if dbURL != "" {
		backend = "postgres"
	}
	b.Logf("%s: %d ops × %d runs (%d hosts × 5 tasks each): %.1f runs/s, %.0f results/s, run median %.0f ms, p99 %.0f ms, max %.0f ms, %d failed ops",
		backend, ops, incs, per, runs/wall.Seconds(), runs*float64(per*5)/wall.Seconds(), ms(median(all)), ms(percentile(all, 0.99)), ms(slices.Max(all)), failed)
}

// concurrentRuns starts one run per name at once (start returns its
// apply_id), waits for all to end, and fails unless every one succeeded.
// The time of each (request → ended) is appended to durs when not nil.
func (e *env) concurrentRuns(ctx context.Context, names []string, start func(context.Context, string) (apitypes.Accepted, error), durs *[]time.Duration) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range names {
		wg.Go(func() {
			t0 := time.Now()
			acc, err := start(ctx, name)
			if err == nil {
				var run store.Run
				run, err = e.k.Engine().Wait(ctx, acc.ApplyID)
				if err == nil && run.Status != store.RunSucceeded {
					err = fmt.Errorf("run %s of %s %s: %s", run.ID, name, run.Status, run.Error)
				}
			}
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			if durs != nil {
				*durs = append(*durs, d)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d runs failed, first: %w", len(errs), len(names), errs[0])
	}
	return nil
}

// percentile is the p-quantile (nearest rank) of xs.
func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
