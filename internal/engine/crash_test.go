package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/scenariotest"
	"github.com/soulstack/soulstack/internal/store"
)

// tap is a Dispatcher that remembers the work it was given (the task ids
// a soul would answer late with).
type tap struct {
	dispatch.Dispatcher
	mu   sync.Mutex
	sent []dispatch.Request
}

func (d *tap) Dispatch(ctx context.Context, reqs []dispatch.Request, onResult func(string, domain.Result)) map[string]domain.Result {
	d.mu.Lock()
	d.sent = append(d.sent, reqs...)
	d.mu.Unlock()
	return d.Dispatcher.Dispatch(ctx, reqs, onResult)
}

// taskID waits until work of task was sent to sid and returns its id.
func (d *tap) taskID(t *testing.T, sid, task string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		for _, r := range d.sent {
			if r.SID == sid && r.Work.Task == task {
				d.mu.Unlock()
				return r.Work.TaskID
			}
		}
		d.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no work of %q was sent to %s", task, sid)
	return ""
}

// oneService opens the service under test at any commit.
type oneService struct{ svc *dsl.Service }

func (s oneService) Open(context.Context, string, string) (*dsl.Service, error) { return s.svc, nil }

// keeperProcess is one life of a keeper over the world's store: an engine
// of its own (the harness's stays idle), as a restarted keeper process
// builds a new one over the same database.
func (w *world) keeperProcess(d dispatch.Dispatcher) *engine.Engine {
	w.t.Helper()
	e, err := engine.New(engine.Config{
		Store: w.Store, Dispatcher: d, Local: w.Sim, Services: oneService{w.Service},
		KeeperID: scenariotest.KeeperID, DefaultTimeout: time.Minute,
		Sleep:   func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		TaskKey: sharedTaskKey, // the keepers of one database share it
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		// A run still hanging is the dead keeper's: stop it at once.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			w.t.Error(err)
		}
	})
	return e
}

// engineOver is a second engine over the world's simulated hosts and
// service whose store calls go through st (the world's store wrapped by a
// test); it is closed when the test ends.
func (w *world) engineOver(st store.Store) *engine.Engine {
	w.t.Helper()
	k, err := engine.New(engine.Config{Store: st, Dispatcher: w.Sim, Local: w.Sim, Services: oneService{w.Service}, KeeperID: "k"})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

// readyIncarnation records the test's incarnation ready with state, as
// an earlier successful run would have left it.
func (w *world) readyIncarnation(state map[string]any) {
	w.t.Helper()
	inc := store.Incarnation{Name: w.Test.Incarnation.Name, Service: "app", Ref: "test", Commit: strings.Repeat("0", 40), Covens: []string{"app"}}
	for _, h := range w.Test.Hosts {
		inc.Members = append(inc.Members, h.SID)
	}
	setup := store.Run{ID: "setup", Scenario: engine.CreateScenario, Status: store.RunRunning}
	if err := w.Store.CreateIncarnation(w.ctx, inc, setup); err != nil {
		w.t.Fatal(err)
	}
	if err := w.Store.CommitRun(w.ctx, setup.ID, state, store.Snapshot{}, time.Now()); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) triggers() []string {
	w.t.Helper()
	ts, err := w.Store.ListTriggers(w.ctx, w.Test.Incarnation.Name, w.Test.Scenario)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, tr := range ts {
		out = append(out, tr.Task+"@"+tr.SID)
	}
	return out
}

// eventually polls cond until it holds (10 s at most).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const crashScenario = `
state_changes:
  sets: {version: "2"}
tasks:
  - name: render config
    module: core.file.present
    register: conf
    params: {path: /etc/app.conf, content: v2}
  - name: restart app
    module: core.service.restarted
    onchanges: [conf]
    params: {name: app}
`

// TestKeeperCrashMidWave is SPEC §8.5 with §8.3: the keeper dies while the
// render waits for b, after a answered with a change. What a answered is
// in the store already; the restarted keeper aborts the run and owes a
// the restart. b's late answer is recorded in the aborted run, changes
// neither the run nor the incarnation, and owes b the restart too. After
// the unlock the rerun renders nothing new and still restarts both.
func TestKeeperCrashMidWave(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}, {sid: b, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{"version": "1"})
	w.Sim.SetStubs([]dispatch.Stub{
		{Module: "core.file.present", Hosts: []string{"a"}, Results: []domain.Result{{Changed: true, Diff: "-v1\n+v2"}}},
		{Module: "core.file.present", Hosts: []string{"b"}, Hang: true},
	})
	first := &tap{Dispatcher: w.Sim}
	k1 := w.keeperProcess(first)
	id, err := k1.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	events, stop := k1.Subscribe(id)
	defer stop()

	// a's render is stored and streamed while the wave still waits for b.
	lateID := first.taskID(t, "b", "render config")
	eventually(t, "a's render in the store mid-wave", func() bool {
		return rowsOf(w.results(id), "0")["a"].Status == "changed"
	})
	if !k1.Live(id) {
		t.Fatal("the run ended: the wave should still wait for b")
	}
	for ev := range events {
		if ev.Type == engine.EventHost && ev.Result.SID == "a" {
			break
		}
		if ev.Type == engine.EventDone {
			t.Fatal("no host event for a before the run ended")
		}
	}

	// The keeper dies (k1 is simply never heard of again) and a new one
	// starts over the same database.
	k2 := w.keeperProcess(w.Sim)
	aborted, err := k2.Recover(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(aborted) != 1 || aborted[0].ID != id || aborted[0].Status != store.RunAborted {
		t.Fatalf("recovered %+v, want run %s aborted", aborted, id)
	}
	rows := rowsOf(w.results(id), "0")
	if rows["a"].Status != "changed" || rows["a"].Diff != "-v1\n+v2" {
		t.Errorf("a's render in the aborted run = %+v, want changed with its diff", rows["a"])
	}
	if _, ok := rows["b"]; ok {
		t.Errorf("b's render recorded before b answered: %+v", rows["b"])
	}
	if diff := cmp.Diff([]string{"restart app@a"}, w.triggers()); diff != "" {
		t.Errorf("pending triggers after the crash (-want +got):\n%s", diff)
	}

	// b finishes the render and answers the new keeper, late.
	k2.RecordLate("b", id, lateID, domain.Result{Changed: true, Msg: "written", DurationMS: 1500})
	eventually(t, "b's late render in the aborted run", func() bool {
		_, ok := rowsOf(w.results(id), "0")["b"]
		return ok
	})
	late := rowsOf(w.results(id), "0")["b"]
	if late.Status != "changed" || late.TaskName != "render config" || late.Wave != 1 || late.Data["late"] != true || !strings.Contains(late.Msg, "late result") || !strings.Contains(late.Msg, "written") {
		t.Errorf("b's late render = %+v, want changed, named, wave 1, marked late", late)
	}
	run, err := w.Store.GetRun(w.ctx, id)
	if err != nil || run.Status != store.RunAborted {
		t.Errorf("run after the late result: %s (%v), want aborted", run.Status, err)
	}
	inc := w.incarnation()
	if inc.Status != store.IncarnationErrorLocked || !cmp.Equal(inc.State, map[string]any{"version": "1"}) {
		t.Errorf("incarnation after the late result: %s %v, want error_locked with the old state", inc.Status, inc.State)
	}
	eventually(t, "b's restart owed after its late change", func() bool { return len(w.triggers()) == 2 })
	if diff := cmp.Diff([]string{"restart app@a", "restart app@b"}, w.triggers()); diff != "" {
		t.Errorf("pending triggers after the late result (-want +got):\n%s", diff)
	}

	// The rerun on the new keeper: the config is rendered already, yet
	// the restarts still happen, then the triggers are gone.
	w.unlock()
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.service.restarted", Results: []domain.Result{{Changed: true}}}})
	id2, err := k2.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if run, err := k2.Wait(w.ctx, id2); err != nil || run.Status != store.RunSucceeded {
		t.Fatalf("rerun: %+v %v", run, err)
	}
	rs := w.results(id2)
	for sid, want := range map[string][2]string{"a": {"ok", "changed"}, "b": {"ok", "changed"}} {
		if got := [2]string{rowsOf(rs, "0")[sid].Status, rowsOf(rs, "1")[sid].Status}; got != want {
			t.Errorf("rerun on %s: render, restart = %v, want %v", sid, got, want)
		}
	}
	if got := w.triggers(); len(got) != 0 {
		t.Errorf("pending triggers after the handlers ran: %v", got)
	}
	if st := w.incarnation().State; !cmp.Equal(st, map[string]any{"version": "2"}) {
		t.Errorf("state after the rerun = %v", st)
	}
}

const timeoutScenario = `
tasks:
  - name: migrate
    module: core.exec.run
    register: migrate
    timeout: 100ms
    params: {command: migrate}
  - name: report
    module: core.exec.run
    onfail: [migrate]
    timeout: 1s
    params: {command: report}
`

// TestLateResultOfATimedOutTask: the run gave up on a (timeout) and is
// still running its onfail handler when a's answer comes. It is recorded
// once the run has ended, as a's row of the task, keeping what the run
// had decided; the run stays failed.
func TestLateResultOfATimedOutTask(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/migrate/main.yml": timeoutScenario})
	w := newWorld(t, svc, "migrate", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: failed}
`)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Hang: true}})
	d := &tap{Dispatcher: w.Sim}
	k := w.keeperProcess(d)
	id, err := k.StartRun(w.ctx, "test", "migrate", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	lateID := d.taskID(t, "a", "migrate")
	w.waitForCall("a", "report")
	if !k.Live(id) {
		t.Fatal("the run ended before its onfail handler timed out")
	}
	// Never blocks, whatever the engine is doing.
	k.RecordLate("a", id, lateID, domain.Result{Changed: true, Stdout: "3 migrations applied"})
	k.RecordLate("a", id, "not-a-task-id", domain.Result{})
	k.RecordLate("b", id, lateID, domain.Result{Failed: true})

	run, err := k.Wait(w.ctx, id)
	if err != nil || run.Status != store.RunFailed {
		t.Fatalf("run %+v %v, want failed", run, err)
	}
	eventually(t, "a's late result", func() bool { return rowsOf(w.results(id), "0")["a"].Data["late"] == true })
	row := rowsOf(w.results(id), "0")["a"]
	sup, _ := row.Data["superseded"].(map[string]any)
	if row.Status != "changed" || row.Stdout != "3 migrations applied" || sup["status"] != "failed" || !strings.Contains(fmt.Sprint(sup["msg"]), "timed out") {
		t.Errorf("a's row of migrate = %+v, want the late change, keeping the timeout it replaced", row)
	}
	if run, _ := w.Store.GetRun(w.ctx, id); run.Status != store.RunFailed {
		t.Errorf("run after the late result: %s", run.Status)
	}
}

// TestLateResultsAreDrainedOnClose: Close records what was queued; later
// results are dropped, not blocked on.
func TestLateResultsAreDrainedOnClose(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.file.present", Hang: true}})
	d := &tap{Dispatcher: w.Sim}
	k1 := w.keeperProcess(d)
	id, err := k1.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	lateID := d.taskID(t, "a", "render config")
	k2 := w.keeperProcess(w.Sim)
	if _, err := k2.Recover(w.ctx); err != nil {
		t.Fatal(err)
	}
	k2.RecordLate("a", id, lateID, domain.Result{})
	if err := k2.Close(w.ctx); err != nil {
		t.Fatal(err)
	}
	if row, ok := rowsOf(w.results(id), "0")["a"]; !ok || row.Status != "ok" || row.Data["late"] != true {
		t.Errorf("after Close: a's row = %+v (%v), want the late ok", row, ok)
	}
	k2.RecordLate("a", id, lateID, domain.Result{Failed: true})
	if row := rowsOf(w.results(id), "0")["a"]; row.Status != "ok" {
		t.Errorf("a result after Close was recorded: %+v", row)
	}
}

// countingStore counts RecordResults calls.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	calls int
}

func (s *countingStore) RecordResults(ctx context.Context, rs []store.HostResult) error {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Store.RecordResults(ctx, rs)
}

// TestResultsOfAWideWaveAreBatched: recording as hosts answer does not
// mean one write per host.
func TestResultsOfAWideWaveAreBatched(t *testing.T) {
	const n = 600
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	var b strings.Builder
	b.WriteString("hosts:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {sid: h%03d, covens: [app]}\n", i)
	}
	b.WriteString("incarnation: {covens: [app]}\nexpect: {outcome: succeeded}\n")
	w := newWorld(t, svc, "deploy", b.String())
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.file.present", Results: []domain.Result{{Changed: true}}}})
	cs := &countingStore{Store: w.Store}
	k, err := engine.New(engine.Config{Store: cs, Dispatcher: w.Sim, Services: oneService{svc}, KeeperID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(w.ctx)
	id, err := k.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if run, err := k.Wait(w.ctx, id); err != nil || run.Status != store.RunSucceeded {
		t.Fatalf("run %+v %v", run, err)
	}
	rs := w.results(id)
	if len(rowsOf(rs, "0")) != n || len(rowsOf(rs, "1")) != n {
		t.Fatalf("stored %d render and %d restart rows, want %d each", len(rowsOf(rs, "0")), len(rowsOf(rs, "1")), n)
	}
	// Two tasks of n hosts: a write per batch of up to 256 rows or 50 ms,
	// not one per host.
	if cs.calls > 40 {
		t.Errorf("%d RecordResults calls for %d rows", cs.calls, 2*n)
	}
	t.Logf("%d RecordResults calls for %d rows", cs.calls, 2*n)
}

const probeScenario = `
tasks:
  - name: probe
    module: core.exec.run
    register: role
    changed_when: false
    failed_when: size(register.role) < incarnation.host_count
    params: {command: role}
`

// TestProbeResultStoredOnArrival: a host's probe result is stored while
// the wave waits for the others with changed_when applied (not shown
// changed) and failed_when not yet (it needs every host's answer).
func TestProbeResultStoredOnArrival(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/probe/main.yml": probeScenario})
	w := newWorld(t, svc, "probe", `
hosts: [{sid: a, covens: [app]}, {sid: b, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: cancelled}
`)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{
		{Module: "core.exec.run", Hosts: []string{"a"}, Results: []domain.Result{{Changed: true, Stdout: "master"}}},
		{Module: "core.exec.run", Hosts: []string{"b"}, Hang: true},
	})
	k := w.keeperProcess(w.Sim)
	id, err := k.StartRun(w.ctx, "test", "probe", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's probe in the store mid-wave", func() bool {
		_, ok := rowsOf(w.results(id), "0")["a"]
		return ok
	})
	if row := rowsOf(w.results(id), "0")["a"]; row.Status != "ok" || row.Changed || row.Stdout != "master" {
		t.Errorf("a's probe mid-wave = %+v, want ok (changed_when: false) with its stdout", row)
	}
	if err := k.Cancel(w.ctx, id); err != nil {
		t.Fatal(err)
	}
	if run, err := k.Wait(w.ctx, id); err != nil || run.Status != store.RunCancelled {
		t.Fatalf("run %+v %v", run, err)
	}
}

// TestLateResultFromANonMemberIsIgnored: a soul can only add late results
// to runs of incarnations it is a member of — work it was never sent.
func TestLateResultFromANonMemberIsIgnored(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.file.present", Hang: true}})
	d := &tap{Dispatcher: w.Sim}
	k1 := w.keeperProcess(d)
	id, err := k1.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	lateID := d.taskID(t, "a", "render config")
	forged := strings.Replace(lateID, "/a/", "/intruder/", 1)
	k2 := w.keeperProcess(w.Sim)
	if _, err := k2.Recover(w.ctx); err != nil {
		t.Fatal(err)
	}
	k2.RecordLate("intruder", id, forged, domain.Result{Changed: true})
	k2.RecordLate("a", id, lateID, domain.Result{})
	if err := k2.Close(w.ctx); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(w.results(id), "0")
	if _, ok := rows["intruder"]; ok {
		t.Errorf("a non-member's late result was recorded: %+v", rows["intruder"])
	}
	if rows["a"].Data["late"] != true {
		t.Errorf("the member's late result was not recorded: %+v", rows["a"])
	}
	trig, err := w.Store.ListTriggers(w.ctx, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trig {
		if tr.SID == "intruder" {
			t.Errorf("a non-member got a pending trigger: %+v", tr)
		}
	}
}

// sharedTaskKey is the task-id key of every keeper process of a test.
var sharedTaskKey = []byte("keepers of one database share it")
