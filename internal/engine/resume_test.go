package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

// rolloutScenario: a probe, a config write, a serial: 1 restart and a
// state that reads the probe and the config's registers.
const rolloutScenario = `
tasks:
  - name: who is master
    module: core.exec.run
    params: {cmd: "redis-cli role"}
    register: role
    changed_when: false
  - name: write config
    module: core.file.present
    register: conf
    params: {path: /etc/app.conf, content: v2}
  - name: restart app
    module: core.service.restarted
    register: restart
    serial: 1
    onchanges: [conf]
    params: {name: app}
state_changes:
  sets:
    version: '${ register.role.hosts["h1"].stdout }'
    count: "${ size(register.restart) }"
`

func resume(t *testing.T, w *world, id string, secrets map[string]any) (string, error) {
	t.Helper()
	return w.Engine.ResumeRun(w.ctx, engine.ResumeRequest{ApplyID: id, Reason: "fixed the unit on h3", Secrets: secrets})
}

// TestResumeRestartsAtTheFailedWave is SPEC §8.8: a serial: 1 restart
// fails on the third of five hosts; the resume does not touch hosts 1-2
// again, runs the probe again (live data), carries the config write's
// results into register (no second write), restarts at wave 3 and
// commits once over old and new results; the runs are linked.
func TestResumeRestartsAtTheFailedWave(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": rolloutScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: h1}, {sid: h2}, {sid: h3}, {sid: h4}, {sid: h5}]
stubs:
  - {module: core.exec.run, result: {stdout: "old-master"}}
  - {module: core.file.present, result: {changed: true}}
  - {module: core.service.restarted, hosts: [h3], result: {failed: true, msg: "unit app failed to start"}}
  - {module: core.service.restarted, result: {changed: true}}
expect:
  outcome: failed
`)
	first := w.run()
	if inc := w.incarnation(); inc.Status != store.IncarnationErrorLocked {
		t.Fatalf("after the failure: %s", inc.Status)
	}
	before := len(w.Sim.Calls())

	// A resume of a run that is not the failed one, or without a reason,
	// is refused.
	if _, err := w.Engine.ResumeRun(w.ctx, engine.ResumeRequest{ApplyID: first.ID}); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("resume without a reason: %v", err)
	}

	// The host is repaired; the probe now sees another master.
	w.Sim.SetStubs([]dispatch.Stub{
		{Module: "core.exec.run", Results: []domain.Result{{Stdout: "new-master"}}},
		{Module: "core.service.restarted", Results: []domain.Result{{Changed: true}}},
	})
	id, err := resume(t, w, first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := w.wait(id)
	if run.Status != store.RunSucceeded || run.ResumedFrom != first.ID {
		t.Fatalf("resumed run: %s %q (resumed_from %q)", run.Status, run.Error, run.ResumedFrom)
	}
	calls := w.Sim.Calls()[before:]
	if got := callsTo(calls, "write config"); len(got) != 0 {
		t.Errorf("the config was written again: %v", got)
	}
	if got := callsTo(calls, "who is master"); len(got) != 5 {
		t.Errorf("the probe ran again on %d hosts, want 5", len(got))
	}
	restarted := callsTo(calls, "restart app")
	for _, sid := range []string{"h1", "h2"} {
		if len(restarted[sid]) != 0 {
			t.Errorf("%s (an earlier wave that succeeded) was restarted again", sid)
		}
	}
	for _, sid := range []string{"h3", "h4", "h5"} {
		if len(restarted[sid]) != 1 {
			t.Errorf("%s was restarted %d times, want once", sid, len(restarted[sid]))
		}
	}
	// The resumed run's record holds every host's result, the carried ones
	// marked; the probe's are fresh.
	rs := w.results(id)
	if len(rowsOf(rs, "2")) != 5 {
		t.Errorf("restart rows in the resumed run: %v", rowsOf(rs, "2"))
	}
	for sid, row := range rowsOf(rs, "2") {
		carried := row.Data["carried_from"] == first.ID
		if want := sid == "h1" || sid == "h2"; carried != want || row.Status != "changed" {
			t.Errorf("restart on %s: %s carried=%v", sid, row.Status, carried)
		}
	}
	if row := rowsOf(rs, "1")["h4"]; row.Data["carried_from"] != first.ID || !row.Changed {
		t.Errorf("config on h4 not carried: %+v", row)
	}
	if row := rowsOf(rs, "0")["h1"]; row.Data["carried_from"] != nil || row.Stdout != "new-master" {
		t.Errorf("probe on h1 not run again: %+v", row)
	}
	// One commit, over the merged registers: the fresh probe, five restarts.
	inc := w.incarnation()
	if inc.Status != store.IncarnationReady || inc.State["version"] != "new-master" || inc.State["count"] != float64(5) {
		t.Errorf("after the resume: %s %v", inc.Status, inc.State)
	}
	hist, err := w.Store.ListHistory(w.ctx, inc.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].RunID != id || hist[0].ResumedFrom != first.ID {
		t.Errorf("history: %+v", hist)
	}
	// A succeeded run cannot be resumed.
	if _, err := resume(t, w, id, nil); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("resume of a succeeded run: %v", err)
	}
}

// TestResumeRefusals: the commit or the members changed, another run is
// active, the run is not the last one — each refused with why; a resume
// that fails again can be resumed again.
func TestResumeRefusals(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": rolloutScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: h1}, {sid: h2}, {sid: h3}]
stubs:
  - {module: core.file.present, result: {changed: true}}
  - {module: core.service.restarted, hosts: [h2], result: {failed: true, msg: broken}}
expect:
  outcome: failed
`)
	first := w.run()
	name := w.incarnation().Name

	// Members changed: refused, then put back.
	if err := w.Store.RemoveMembers(w.ctx, name, []string{"h3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := resume(t, w, first.ID, nil); domain.ErrorCode(err) != domain.CodeConflict || !strings.Contains(err.Error(), "removed h3") {
		t.Errorf("members changed: %v", err)
	}
	if err := w.Store.AddMembers(w.ctx, name, []string{"h3"}); err != nil {
		t.Fatal(err)
	}

	// Resumed, fails again (h2 still broken): resumable again, and the
	// first run no longer is (it is not the last).
	second, err := resume(t, w, first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run := w.wait(second); run.Status != store.RunFailed {
		t.Fatalf("second: %s", run.Status)
	}
	if _, err := resume(t, w, first.ID, nil); domain.ErrorCode(err) != domain.CodeConflict || !strings.Contains(err.Error(), "not the last run") {
		t.Errorf("resume of an older run: %v", err)
	}
	w.Sim.SetStubs(nil)
	third, err := resume(t, w, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run := w.wait(third); run.Status != store.RunSucceeded {
		t.Fatalf("third: %s %s", run.Status, run.Error)
	}
	// h1's restart was carried twice (first → second → third), never rerun.
	n := 0
	for _, c := range w.Sim.Calls() {
		if c.Task == "restart app" && c.SID == "h1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("h1 restarted %d times over three runs, want 1", n)
	}

	// The commit changed: refused.
	w.unlockOrFail(t)
	failing := w.failAgain(t)
	if err := w.Store.SetIncarnationCommit(w.ctx, name, "v2", "another-commit"); err != nil {
		t.Fatal(err)
	}
	if _, err := resume(t, w, failing, nil); domain.ErrorCode(err) != domain.CodeConflict || !strings.Contains(err.Error(), "commit changed") {
		t.Errorf("commit changed: %v", err)
	}
}

// unlockOrFail unlocks the incarnation when it is locked.
func (w *world) unlockOrFail(t *testing.T) {
	t.Helper()
	if w.incarnation().Status == store.IncarnationErrorLocked {
		w.unlock()
	}
}

// failAgain runs the scenario once more with h2 failing and returns the
// failed run's id.
func (w *world) failAgain(t *testing.T) string {
	t.Helper()
	w.Sim.SetStubs([]dispatch.Stub{
		{Module: "core.file.present", Results: []domain.Result{{Changed: true}}},
		{Module: "core.service.restarted", Hosts: []string{"h2"}, Results: []domain.Result{{Failed: true, Msg: "broken"}}},
	})
	run := w.again(nil, false)
	if run.Status != store.RunFailed {
		t.Fatalf("run meant to fail: %s", run.Status)
	}
	return run.ID
}

// TestResumeAnAbortedRun: the keeper died mid-wave; after the restart the
// aborted run is resumed: the task the crash interrupted runs again
// (nobody knows whether it finished everywhere), then the rest, and the
// state commits.
func TestResumeAnAbortedRun(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}, {sid: b, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{"version": "1"})
	w.Sim.SetStubs([]dispatch.Stub{
		{Module: "core.file.present", Hosts: []string{"a"}, Results: []domain.Result{{Changed: true}}},
		{Module: "core.file.present", Hosts: []string{"b"}, Hang: true},
	})
	k1 := w.keeperProcess(w.Sim)
	id, err := k1.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's render stored", func() bool { return rowsOf(w.results(id), "0")["a"].Status == "changed" })
	k2 := w.keeperProcess(w.Sim)
	if _, err := k2.Recover(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.service.restarted", Results: []domain.Result{{Changed: true}}}})
	id2, err := k2.ResumeRun(w.ctx, engine.ResumeRequest{ApplyID: id, Reason: "b is back"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := k2.Wait(w.ctx, id2)
	if err != nil || run.Status != store.RunSucceeded || run.ResumedFrom != id {
		t.Fatalf("resume of the aborted run: %+v %v", run, err)
	}
	rs := w.results(id2)
	if r := rowsOf(rs, "0")["b"]; r.Status != "ok" || r.Data["carried_from"] != nil {
		t.Errorf("render on b not run again: %+v", r)
	}
	// a's restart is owed (its render changed before the crash).
	if r := rowsOf(rs, "1")["a"]; r.Status != "changed" {
		t.Errorf("restart on a: %+v", r)
	}
	if st := w.incarnation().State; st["version"] != "2" {
		t.Errorf("state after the resume: %v", st)
	}
}

// TestResumeRunsProbesInsideBlocksAgain: a block finished before the
// failure is entered again on resume so that its read-only probe runs
// with live data; its other tasks are carried over, not run.
func TestResumeRunsProbesInsideBlocksAgain(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: prepare
    block:
      - name: health
        module: core.exec.run
        register: health
        changed_when: false
        params: {cmd: "check-health"}
      - name: write config
        module: core.file.present
        register: conf
        params: {path: /etc/app.conf, content: v2}
  - name: restart app
    module: core.service.restarted
    params: {name: app}
state_changes:
  sets:
    version: '${ register.health.hosts["a"].stdout }'
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
stubs:
  - {module: core.exec.run, result: {stdout: "sick"}}
  - {module: core.file.present, result: {changed: true}}
  - {module: core.service.restarted, hosts: [b], result: {failed: true, msg: broken}}
expect:
  outcome: failed
`)
	first := w.run()
	before := len(w.Sim.Calls())
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Results: []domain.Result{{Stdout: "healthy"}}}})
	id, err := resume(t, w, first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run := w.wait(id); run.Status != store.RunSucceeded {
		t.Fatalf("resume: %s %s", run.Status, run.Error)
	}
	calls := w.Sim.Calls()[before:]
	if got := callsTo(calls, "health"); len(got) != 2 {
		t.Errorf("the probe inside the block ran again on %d hosts, want 2", len(got))
	}
	if got := callsTo(calls, "write config"); len(got) != 0 {
		t.Errorf("the config was written again: %v", got)
	}
	rs := w.results(id)
	if row := rowsOf(rs, "0.1")["a"]; row.Data["carried_from"] != first.ID || !row.Changed {
		t.Errorf("write config on a not carried: %+v", row)
	}
	if row := rowsOf(rs, "0")["b"]; !row.Changed {
		t.Errorf("the block's row on b: %+v", row)
	}
	if st := w.incarnation().State; st["version"] != "healthy" {
		t.Errorf("state from the fresh probe: %v", st)
	}
}

// TestResumeAsksForSecretsAgain: the run stored its secret input masked;
// a resume must be given it again, and nothing else of the input changes.
func TestResumeAsksForSecretsAgain(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
input:
  token: {type: string, secret: true, required: true}
  tier: {type: string, default: gold}
tasks:
  - name: login
    module: core.exec.run
    params: {cmd: "login ${ input.token }"}
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
input: {token: s3cr3t}
stubs:
  - {module: core.exec.run, result: {failed: true, msg: "denied"}}
expect:
  outcome: failed
`)
	first := w.run()
	w.Sim.SetStubs(nil)
	if _, err := resume(t, w, first.ID, nil); domain.ErrorCode(err) != domain.CodeUnprocessable || !strings.Contains(err.Error(), "token") {
		t.Errorf("resume without the secret: %v", err)
	}
	if _, err := resume(t, w, first.ID, map[string]any{"token": "s3cr3t", "tier": "silver"}); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("resume changing a plain input: %v", err)
	}
	before := len(w.Sim.Calls())
	id, err := resume(t, w, first.ID, map[string]any{"token": "s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	run := w.wait(id)
	if run.Status != store.RunSucceeded || run.Input["token"] != "****" || run.Input["tier"] != "gold" {
		t.Fatalf("resume with the secret: %+v", run)
	}
	calls := w.Sim.Calls()[before:]
	if len(calls) != 1 || !strings.Contains(fmt.Sprint(calls[0].Params), "login s3cr3t") {
		t.Errorf("the login did not get the secret again: %+v", calls)
	}
}
