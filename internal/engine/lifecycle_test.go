package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

const createScenario = `
input:
  banner: {type: string, default: hello}
state_changes:
  sets:
    version: "${ input.banner }"
tasks:
  - name: motd
    module: core.file.present
    params: {path: /etc/motd, content: "${ input.banner }"}
`

func TestCreateIncarnationComputesMembersOnce(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/create/main.yml": createScenario})
	w := newWorld(t, svc, "create", `
hosts:
  - {sid: a, covens: [prod, web]}
  - {sid: b, covens: [prod, web], disconnected: true}
  - {sid: c, covens: [prod]}
  - {sid: d, covens: [stage, web]}
incarnation: {name: web, covens: [prod, web]}
input: {banner: managed}
stubs:
  - {module: core.file.present, result: {changed: true}}
expect:
  outcome: failed
  members: [a, b]
  status: error_locked
  state: {}
  tasks:
    - {task: motd, ran: [a], changed: [a], unreachable: [b]}
`)
	// A pending soul carrying the covens is not a member: only accepted
	// souls are.
	if err := w.Store.UpsertSoul(w.ctx, store.Soul{SID: "p", Status: store.SoulPending, Covens: []string{"prod", "web"}}); err != nil {
		t.Fatal(err)
	}
	run := w.run()
	if run.Scenario != engine.CreateScenario {
		t.Errorf("scenario = %s, want create", run.Scenario)
	}
	// Membership is a relation of its own: a soul accepted later with the
	// covens does not join.
	if err := w.Store.UpsertSoul(w.ctx, store.Soul{SID: "e", Status: store.SoulConnected, Covens: []string{"prod", "web"}}); err != nil {
		t.Fatal(err)
	}
	w.unlock()
	w.Sim.SetDown("b", false)
	run = w.again(nil, false)
	if run.Status != store.RunSucceeded {
		t.Fatalf("second run %s: %s", run.Status, run.Error)
	}
	inc := w.incarnation()
	if got := strings.Join(inc.Members, ","); got != "a,b" {
		t.Errorf("members = %s, want a,b", got)
	}
	if inc.State["version"] != "hello" || inc.Status != store.IncarnationReady {
		t.Errorf("incarnation = %s %v, want ready with version hello", inc.Status, inc.State)
	}

	_, err := w.Engine.CreateIncarnation(w.ctx, engine.CreateRequest{Name: "web", Service: "app", Covens: []string{"prod"}})
	if domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("creating web again: %v, want a conflict", err)
	}
	for _, bad := range []engine.CreateRequest{
		{Name: "Bad Name", Service: "app", Covens: []string{"prod"}},
		{Name: "nocovens", Service: "app"},
		{Name: "badinput", Service: "app", Covens: []string{"prod"}, Input: map[string]any{"nope": 1}},
	} {
		if _, err := w.Engine.CreateIncarnation(w.ctx, bad); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("CreateIncarnation(%+v) = %v, want invalid", bad, err)
		}
	}
	if _, err := w.Engine.CreateIncarnation(w.ctx, engine.CreateRequest{Name: "x", Service: "nope", Covens: []string{"prod"}}); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("unknown service: %v, want not found", err)
	}
	_, err = w.Engine.CreateIncarnation(w.ctx, engine.CreateRequest{Name: "typo", Service: "app", Covens: []string{"prdo"}})
	if domain.ErrorCode(err) != domain.CodeUnprocessable || !strings.Contains(err.Error(), "no accepted soul carries all of the covens prdo") {
		t.Errorf("covens matching no soul: %v, want unprocessable", err)
	}
	if _, err := w.Store.GetIncarnation(w.ctx, "typo"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("the refused incarnation exists: %v", err)
	}
}

const slowScenario = `
tasks:
  - name: slow
    module: core.exec.run
    params: {command: sleep 600}
  - name: after
    module: core.test.ping
`

func TestOneRunAtATimeAndCancel(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/slow/main.yml": slowScenario})
	w := newWorld(t, svc, "slow", `
hosts: [{sid: a}, {sid: b}]
stubs:
  - {module: core.exec.run, hosts: [a], result: {changed: true}}
expect: {outcome: cancelled}
`)
	w.Sim.SetStubs(append(w.Test.Stubs, dispatch.Stub{Module: "core.exec.run", Hosts: []string{"b"}, Hang: true}))
	id := w.start()
	events, stop := w.Engine.Subscribe(id)
	defer stop()
	w.waitForCall("b", "slow")

	_, err := w.Engine.StartRun(w.ctx, "test", "slow", nil, false, "")
	var de *domain.Error
	if domain.ErrorCode(err) != domain.CodeConflict || !errorsAs(err, &de) || de.Details != id {
		t.Fatalf("second run: %v, want a conflict naming %s", err, id)
	}
	if err := w.Engine.Cancel(w.ctx, id); err != nil {
		t.Fatal(err)
	}
	run := w.wait(id)
	if run.Status != store.RunCancelled || !strings.Contains(run.Error, "half-done") {
		t.Errorf("run = %s %q, want cancelled saying hosts may be half-done", run.Status, run.Error)
	}
	if inc := w.incarnation(); inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
		t.Errorf("incarnation %s (active %q), want error_locked", inc.Status, inc.ActiveRun)
	}
	rows := rowsOf(w.results(id), "0")
	if rows["a"].Status != "changed" || rows["b"].Status != "failed" {
		t.Errorf("slow rows = %+v", rows)
	}
	if len(rowsOf(w.results(id), "1")) != 0 {
		t.Error("a task started after the cancellation")
	}
	// The live events end with the final status.
	var last engine.Event
	hosts := map[string]bool{}
	for ev := range events {
		last = ev
		if ev.Type == engine.EventHost {
			hosts[ev.Result.SID] = true
		}
	}
	if last.Type != engine.EventDone || last.Status != store.RunCancelled {
		t.Errorf("last event = %+v, want done/cancelled", last)
	}
	if !hosts["a"] || !hosts["b"] {
		t.Errorf("host events for %v, want a and b", hosts)
	}

	// error_locked refuses runs until unlocked; a finished run cannot be
	// cancelled.
	if _, err := w.Engine.StartRun(w.ctx, "test", "slow", nil, false, ""); domain.ErrorCode(err) != domain.CodeConflict || !strings.Contains(err.Error(), "error_locked") {
		t.Errorf("run on error_locked: %v, want a conflict", err)
	}
	if err := w.Engine.Cancel(w.ctx, id); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("cancel of a finished run: %v, want a conflict", err)
	}
	w.unlock()
	if _, err := w.Engine.StartRun(w.ctx, "test", "nope", nil, false, ""); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("unknown scenario: %v, want invalid", err)
	}
}

func TestCancelCheckRunKeepsStatus(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/slow/main.yml": slowScenario})
	w := newWorld(t, svc, "slow", `
hosts: [{sid: a}]
check: true
stubs: [{module: core.test.ping}]
expect: {outcome: cancelled}
`)
	// The probe rule: commands run in check mode only as changed_when:
	// false probes, so hang the ping instead.
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.test.ping", Hang: true}})
	id := w.start()
	w.waitForCall("a", "after")
	if err := w.Engine.Cancel(w.ctx, id); err != nil {
		t.Fatal(err)
	}
	run := w.wait(id)
	if run.Status != store.RunCancelled || !run.Check {
		t.Errorf("run = %s check=%v", run.Status, run.Check)
	}
	if inc := w.incarnation(); inc.Status != store.IncarnationReady {
		t.Errorf("check run cancelled: incarnation %s, want still ready", inc.Status)
	}
}

func TestRecoverAbortsRunsOfThisKeeper(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/slow/main.yml": slowScenario})
	w := newWorld(t, svc, "slow", `
hosts: [{sid: a}]
expect: {outcome: succeeded}
`)
	w.wait(w.start())
	// A run this keeper was executing when it died.
	orphan := store.Run{ID: "orphan", Incarnation: "test", Scenario: "slow", Status: store.RunRunning, KeeperID: "scenario-test"}
	if err := w.Store.StartRun(w.ctx, orphan); err != nil {
		t.Fatal(err)
	}
	runs, err := w.Engine.Recover(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != "orphan" || runs[0].Status != store.RunAborted {
		t.Fatalf("recovered %+v", runs)
	}
	inc := w.incarnation()
	if inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
		t.Errorf("incarnation %s active %q, want error_locked", inc.Status, inc.ActiveRun)
	}
	hist, err := w.Store.ListHistory(w.ctx, "test", 0)
	if err != nil || len(hist) != 2 {
		t.Errorf("history %d entries (%v), want the setup and the first run only", len(hist), err)
	}
}

func TestCheckModeCommitsNothing(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {version: "2.0"}
tasks:
  - name: probe
    module: core.exec.run
    register: role
    changed_when: false
    params: {command: "cat /etc/role"}
  - name: migrate
    module: core.exec.run
    where: register.role.stdout == "primary"
    params: {command: "migrate --all"}
  - name: config
    module: core.file.present
    params: {path: /etc/app.conf, content: v2}
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
incarnation: {state: {version: "1.0"}}
check: true
stubs:
  - {module: core.exec.run, task: probe, hosts: [a], result: {stdout: primary}}
  - {module: core.file.present, result: {changed: true, diff: "-v1\n+v2\n"}}
expect:
  outcome: succeeded
  status: ready
  state: {version: "1.0"}
  tasks:
    - {task: probe, ran: [a, b]}
    - {task: migrate, ran: [], skipped: [], unknown: [a]}
    - {task: config, changed: [a, b]}
`)
	run := w.run()
	if !run.Check {
		t.Error("the run is not recorded as a check run")
	}
	calls := w.Sim.Calls()
	for _, c := range calls {
		want := c.Task != "probe"
		if c.Check != want {
			t.Errorf("%s on %s: check=%v, want %v", c.Task, c.SID, c.Check, want)
		}
	}
	if n := len(callsTo(calls, "migrate")); n != 0 {
		t.Errorf("a command ran in check mode on %d hosts", n)
	}
	if diff := rowsOf(w.results(run.ID), "2")["a"].Diff; diff == "" {
		t.Error("check mode lost the diff")
	}
	hist, _ := w.Store.ListHistory(w.ctx, "test", 0)
	if len(hist) != 1 {
		t.Errorf("history has %d entries, want only the setup's", len(hist))
	}
}

// TestStateSchemaViolationCommitsNothing: a value whose type validation
// cannot know (a number input: int or double) is checked at commit; one it
// can know is refused at validation (dsl testdata/state_types.txtar).
func TestStateSchemaViolationCommitsNothing(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
input:
  count: {type: number, default: 2.5}
state_changes:
  sets: {count: "${ input.count }"}
tasks:
  - {name: ping, module: core.test.ping}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
incarnation: {state: {count: 2}}
expect:
  outcome: failed
  error: state_schema
  status: error_locked
  state: {count: 2}
`).run()
}

func TestCloseCancelsRunsWhenItStopsWaiting(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/slow/main.yml": slowScenario})
	w := newWorld(t, svc, "slow", `
hosts: [{sid: a}]
stubs: [{module: core.exec.run, timeout: true}]
expect: {outcome: cancelled}
`)
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Hang: true}})
	id := w.start()
	w.waitForCall("a", "slow")
	ctx, cancel := contextWithTimeout(50 * time.Millisecond)
	defer cancel()
	if err := w.Engine.Close(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := w.Store.GetRun(w.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunCancelled || !strings.Contains(run.Error, "shutting down") {
		t.Errorf("run = %s %q, want cancelled by the shutdown", run.Status, run.Error)
	}
	if _, err := w.Engine.StartRun(w.ctx, "test", "slow", nil, false, ""); domain.ErrorCode(err) != domain.CodeUnavailable {
		t.Errorf("run after Close: %v, want unavailable", err)
	}
}

func TestCreateWithoutCreateScenarioIsReadyAtOnce(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/slow/main.yml": slowScenario})
	w := newWorld(t, svc, "slow", `
hosts: [{sid: a, covens: [x]}]
expect: {outcome: succeeded}
`)
	id, err := w.Engine.CreateIncarnation(w.ctx, engine.CreateRequest{Name: "bare", Service: "app", Covens: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if run := w.wait(id); run.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	inc, err := w.Store.GetIncarnation(w.ctx, "bare")
	if err != nil || inc.Status != store.IncarnationReady || len(inc.Members) != 1 {
		t.Errorf("incarnation %+v %v", inc, err)
	}
}

// TestLateSubscriberSeesTasksAlreadyStarted: a watcher that connects while
// a run is in its second task first receives the run, task and wave events
// it missed, so it can place the host results it reads from the record.
func TestLateSubscriberSeesTasksAlreadyStarted(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/slow/main.yml": `
tasks:
  - {name: first, module: core.test.ping}
  - {name: slow, module: core.exec.run, params: {command: sleep 600}}
`})
	w := newWorld(t, svc, "slow", `
hosts: [{sid: a}]
expect: {outcome: cancelled}
`)
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Hosts: []string{"a"}, Hang: true}})
	id := w.start()
	w.waitForCall("a", "slow")
	events, stop := w.Engine.Subscribe(id)
	defer stop()
	if err := w.Engine.Cancel(w.ctx, id); err != nil {
		t.Fatal(err)
	}
	var tasks []string
	sawRun := false
	for ev := range events {
		switch ev.Type {
		case engine.EventRun:
			sawRun = true
		case engine.EventTask:
			tasks = append(tasks, ev.Task)
		}
	}
	if !sawRun || strings.Join(tasks, ",") != "first,slow" {
		t.Fatalf("replayed run event %v and tasks %v, want the run event and first,slow", sawRun, tasks)
	}
}

// stallingStore is the real store whose call named stall blocks until
// the caller's context ends, announcing itself on entered.
type stallingStore struct {
	store.Store
	stall   string
	entered chan struct{}
}

func (s *stallingStore) wait(ctx context.Context, call string) error {
	if call != s.stall {
		return nil
	}
	s.entered <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

func (s *stallingStore) SetRunStatus(ctx context.Context, id, status string, at time.Time) error {
	if err := s.wait(ctx, "SetRunStatus"); err != nil {
		return err
	}
	return s.Store.SetRunStatus(ctx, id, status, at)
}

func (s *stallingStore) GetSouls(ctx context.Context, sids []string) ([]store.Soul, error) {
	if err := s.wait(ctx, "GetSouls"); err != nil {
		return nil, err
	}
	return s.Store.GetSouls(ctx, sids)
}

func (s *stallingStore) GetSoulsBrief(ctx context.Context, sids []string) ([]store.Soul, error) {
	if err := s.wait(ctx, "GetSouls"); err != nil {
		return nil, err
	}
	return s.Store.GetSoulsBrief(ctx, sids)
}

// TestCancelBeforeTheFirstTask: a run cancelled while it is still being
// marked running or reading its members (before any task) ends cancelled,
// not failed with the store's "context canceled", and no task runs.
func TestCancelBeforeTheFirstTask(t *testing.T) {
	for _, stall := range []string{"SetRunStatus", "GetSouls"} {
		t.Run(stall, func(t *testing.T) {
			svc := loadService(t, map[string]string{"scenario/slow/main.yml": slowScenario})
			w := newWorld(t, svc, "slow", `
hosts: [{sid: a}, {sid: b}]
expect: {outcome: cancelled}
`)
			w.readyIncarnation(map[string]any{})
			st := &stallingStore{Store: w.Store, stall: stall, entered: make(chan struct{}, 1)}
			k := w.engineOver(st)
			id, err := k.StartRun(w.ctx, "test", "slow", nil, false, "")
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-st.entered:
			case <-time.After(20 * time.Second):
				t.Fatalf("the run never called %s", stall)
			}
			if err := k.Cancel(w.ctx, id); err != nil {
				t.Fatal(err)
			}
			if run := w.waitOn(k, id); run.Status != store.RunCancelled || strings.Contains(run.Error, "context canceled") {
				t.Errorf("run = %s %q, want cancelled", run.Status, run.Error)
			}
			if calls := w.Sim.Calls(); len(calls) != 0 {
				t.Errorf("tasks ran after a cancel before the first: %v", calls)
			}
		})
	}
}
