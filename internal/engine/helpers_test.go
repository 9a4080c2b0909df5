package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/scenariotest"
	"github.com/soulstack/soulstack/internal/store"
)

// defaultManifest is the service.yml of test services that give none.
const defaultManifest = `name: app
state_schema:
  type: object
  properties:
    version: {type: string}
    leader: {type: string}
    count: {type: integer}
`

// loadService builds a service repository from files (path → content) and
// validates it.
func loadService(t testing.TB, files map[string]string) *dsl.Service {
	t.Helper()
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(strings.TrimLeft(v, "\n"))}
	}
	if _, ok := files["service.yml"]; !ok {
		fsys["service.yml"] = &fstest.MapFile{Data: []byte(defaultManifest)}
	}
	svc, ps := dsl.LoadFS(fsys)
	if len(ps) > 0 {
		t.Fatalf("invalid test service:\n%v", ps)
	}
	return svc
}

// world is one test's offline keeper: the scenario test harness (real
// engine, real SQLite store, simulated hosts) for one scenario.
type world struct {
	*scenariotest.Harness
	t   testing.TB
	ctx context.Context
}

// newWorld sets up scenario of svc as described by a scenario test file.
func newWorld(t testing.TB, svc *dsl.Service, scenario, testYAML string, o ...scenariotest.Options) *world {
	t.Helper()
	sc := svc.Scenarios[scenario]
	if sc == nil {
		t.Fatalf("no scenario %s", scenario)
	}
	tc, err := scenariotest.Parse("test.yml", t.Name(), []byte(strings.TrimLeft(testYAML, "\n")), svc, sc)
	if err != nil {
		t.Fatalf("invalid test:\n%v", err)
	}
	var opts scenariotest.Options
	if len(o) > 0 {
		opts = o[0]
	}
	ctx := context.Background()
	h, err := scenariotest.NewHarness(ctx, t.TempDir(), svc, tc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return &world{Harness: h, t: t, ctx: ctx}
}

// start creates the incarnation and starts the scenario.
func (w *world) start() string {
	w.t.Helper()
	id, err := w.Start(w.ctx)
	if err != nil {
		w.t.Fatalf("start: %v", err)
	}
	return id
}

// wait waits for a run.
func (w *world) wait(id string) store.Run {
	w.t.Helper()
	return w.waitOn(w.Engine, id)
}

// waitOn waits for a run of engine k.
func (w *world) waitOn(k *engine.Engine, id string) store.Run {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	run, err := k.Wait(ctx, id)
	if err != nil {
		w.t.Fatalf("wait: %v", err)
	}
	return run
}

// run starts the scenario, waits for it and checks the test's
// expectations.
func (w *world) run() store.Run {
	w.t.Helper()
	run := w.wait(w.start())
	fails, err := w.Check(w.ctx, run, w.results(run.ID))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, f := range fails {
		w.t.Error(f)
	}
	return run
}

// again runs the scenario once more on the same incarnation.
func (w *world) again(input map[string]any, check bool) store.Run {
	w.t.Helper()
	id, err := w.Engine.StartRun(w.ctx, w.Test.Incarnation.Name, w.Test.Scenario, input, check, "")
	if err != nil {
		w.t.Fatalf("start: %v", err)
	}
	return w.wait(id)
}

func (w *world) results(id string) []store.HostResult {
	w.t.Helper()
	rs, err := w.Store.ListResults(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return rs
}

func (w *world) incarnation() store.Incarnation {
	w.t.Helper()
	inc, err := w.Store.GetIncarnation(w.ctx, w.Test.Incarnation.Name)
	if err != nil {
		w.t.Fatal(err)
	}
	return inc
}

func (w *world) unlock() {
	w.t.Helper()
	if err := w.Store.Unlock(w.ctx, w.Test.Incarnation.Name); err != nil {
		w.t.Fatal(err)
	}
}

// waitForCall waits until the simulated host sid received a call for task.
func (w *world) waitForCall(sid, task string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range w.Sim.Calls() {
			if c.SID == sid && c.Task == task {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("host %s never got a call for %q", sid, task)
}

// rowsOf returns the results of the task at path, by SID.
func rowsOf(rs []store.HostResult, path string) map[string]store.HostResult {
	out := map[string]store.HostResult{}
	for _, r := range rs {
		if r.Path == path {
			out[r.SID] = r
		}
	}
	return out
}

// callsTo lists the calls a task got, by host.
func callsTo(calls []dispatch.SimCall, task string) map[string][]dispatch.SimCall {
	out := map[string][]dispatch.SimCall{}
	for _, c := range calls {
		if c.Task == task {
			out[c.SID] = append(out[c.SID], c)
		}
	}
	return out
}

func errorsAs(err error, target **domain.Error) bool { return errors.As(err, target) }

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
