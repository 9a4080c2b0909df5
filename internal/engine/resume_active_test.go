package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestResumeWhileAnotherRunIsActive (issue 17's faults): while a resume
// runs, resuming the failed run again is a conflict naming the active
// run (an operator's double click starts nothing); the resume, cancelled
// mid-wave, is itself resumable, and that resume finishes the rollout
// without touching the hosts of the waves that succeeded.
func TestResumeWhileAnotherRunIsActive(t *testing.T) {
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

	// h2 now hangs on its restart: the resume stays active.
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.service.restarted", Hosts: []string{"h2"}, Hang: true}})
	second, err := resume(t, w, first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.waitForCalls("h2", "restart app", 2)
	_, err = resume(t, w, first.ID, nil)
	if domain.ErrorCode(err) != domain.CodeConflict || !strings.Contains(err.Error(), "active run "+second) {
		t.Fatalf("resume while %s is active: %v, want a conflict naming it", second, err)
	}
	if _, err := resume(t, w, second, nil); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("resume of the running resume: %v", err)
	}

	if err := w.Engine.Cancel(w.ctx, second); err != nil {
		t.Fatal(err)
	}
	if run := w.wait(second); run.Status != store.RunCancelled || w.incarnation().Status != store.IncarnationErrorLocked {
		t.Fatalf("cancelled resume: %s, incarnation %s", run.Status, w.incarnation().Status)
	}
	w.Sim.SetStubs(nil)
	third, err := resume(t, w, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run := w.wait(third); run.Status != store.RunSucceeded || run.ResumedFrom != second {
		t.Fatalf("resume of the cancelled resume: %s %q (resumed_from %q)", run.Status, run.Error, run.ResumedFrom)
	}
	if n := len(callsTo(w.Sim.Calls(), "restart app")["h1"]); n != 1 {
		t.Errorf("h1 (wave 1, done in the first run) restarted %d times, want once", n)
	}
	if n := len(callsTo(w.Sim.Calls(), "restart app")["h3"]); n != 1 {
		t.Errorf("h3 restarted %d times, want once", n)
	}
	if inc := w.incarnation(); inc.Status != store.IncarnationReady || inc.State["count"] != float64(3) {
		t.Errorf("after the third run: %s %v", inc.Status, inc.State)
	}
}

// waitForCalls waits until the simulated host sid received n calls for
// task.
func (w *world) waitForCalls(sid, task string, n int) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(callsTo(w.Sim.Calls(), task)[sid]) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("host %s got fewer than %d calls for %q", sid, n, task)
}
