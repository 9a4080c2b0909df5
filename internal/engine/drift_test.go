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

const driftCreate = `
input:
  motd: {type: string, default: hello}
state_changes:
  sets: {version: "${ input.motd }", motd: "${ input.motd }"}
tasks:
  - name: who is master
    module: core.exec.run
    register: role
    changed_when: false
    params: {cmd: "redis-cli role"}
  - name: motd
    module: core.file.present
    params: {path: /etc/motd, content: "${ input.motd }"}
  - name: restart
    module: core.exec.run
    params: {cmd: "systemctl restart app"}
`

// TestDriftCheck is SPEC §8.9: the create scenario in check mode with the
// committed input; per host the tasks that would change, with diffs; a
// host that is down is unknown (neither drifted nor clean); the probe's
// "change" is none; no host, state or status changes, nothing locks.
func TestDriftCheck(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/create/main.yml": driftCreate})
	w := newWorld(t, svc, "create", `
hosts: [{sid: a, covens: [app]}, {sid: b, covens: [app]}, {sid: c, covens: [app]}]
incarnation: {covens: [app]}
input: {motd: managed}
expect: {outcome: succeeded}
`)
	w.run()
	inc := w.incarnation()
	before := len(w.Sim.Calls())

	// b's motd was edited by hand; c is down.
	w.Sim.SetStubs([]dispatch.Stub{
		{Module: "core.file.present", Hosts: []string{"b"}, Results: []domain.Result{{Changed: true, Diff: "-edited by hand\n+managed"}}},
	})
	w.Sim.SetDown("c", true)
	id, err := w.Engine.DriftCheck(w.ctx, inc.Name, "", "")
	if err != nil {
		t.Fatal(err)
	}
	run := w.wait(id)
	if !run.Check || !run.Drift || run.Input["motd"] != "managed" {
		t.Errorf("drift run: %+v", run)
	}
	for _, c := range w.Sim.Calls()[before:] {
		if !c.Check && c.Task != "who is master" { // the probe runs for real
			t.Errorf("a drift check called %s on %s outside check mode", c.Task, c.SID)
		}
	}
	d, err := w.Store.GetDrift(w.ctx, inc.Name)
	if err != nil || d.Report == nil {
		t.Fatalf("no drift report: %v", err)
	}
	rep := d.Report
	if !rep.Drifted || rep.Tasks != 1 || rep.RunID != id || rep.Scenario != "create" {
		t.Errorf("report: %+v", rep)
	}
	if h := rep.Hosts["b"]; h.Status != store.DriftDrifted || len(h.Tasks) != 1 || h.Tasks[0].Task != "motd" || !strings.Contains(h.Tasks[0].Diff, "edited by hand") {
		t.Errorf("b: %+v", h)
	}
	if h := rep.Hosts["a"]; h.Status != store.DriftClean || len(h.Tasks) != 0 {
		t.Errorf("a: %+v", h)
	}
	if h := rep.Hosts["c"]; h.Status != store.DriftUnknown || !strings.Contains(h.Msg, "unreachable") {
		t.Errorf("c (down): %+v", h)
	}
	after := w.incarnation()
	if after.Status != store.IncarnationReady || after.State["version"] != "managed" || after.ActiveRun != "" {
		t.Errorf("the drift check changed the incarnation: %+v", after)
	}
	hist, _ := w.Store.ListHistory(w.ctx, inc.Name, 0)
	if len(hist) != 1 {
		t.Errorf("the drift check wrote history: %d snapshots", len(hist))
	}

	// Fixed by a real run: the next drift check is clean everywhere.
	w.Sim.SetStubs(nil)
	w.Sim.SetDown("c", false)
	id, err = w.Engine.DriftCheck(w.ctx, inc.Name, "create", "")
	if err != nil {
		t.Fatal(err)
	}
	w.wait(id)
	d, _ = w.Store.GetDrift(w.ctx, inc.Name)
	if d.Report.Drifted || d.Report.RunID != id || d.Report.Hosts["b"].Status != store.DriftClean || d.Report.Hosts["c"].Status != store.DriftClean {
		t.Errorf("after the fix: %+v", d.Report)
	}
	// The input is what the state committed last (a later run changed
	// motd), not the creation input.
	if run := w.again(map[string]any{"motd": "second"}, false); run.Status != store.RunSucceeded {
		t.Fatalf("second create: %s %s", run.Status, run.Error)
	}
	id, err = w.Engine.DriftCheck(w.ctx, inc.Name, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if run := w.wait(id); run.Input["motd"] != "second" {
		t.Errorf("drift input after a later run: %v", run.Input)
	}
	if _, err := w.Engine.DriftCheck(w.ctx, inc.Name, "nope", ""); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("unknown scenario: %v", err)
	}
}

// TestDriftSchedule: the leader starts the checks that are due; a
// follower does not.
func TestDriftSchedule(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/create/main.yml": driftCreate})
	w := newWorld(t, svc, "create", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.run()
	name := w.incarnation().Name
	if err := w.Store.SetDriftSchedule(w.ctx, name, &store.DriftSchedule{Scenario: "create", Every: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Engine.RunDriftSchedules(ctx, func() bool { return false }, 5*time.Millisecond)
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	if d, _ := w.Store.GetDrift(w.ctx, name); d.Report != nil {
		t.Fatalf("a follower ran a drift check: %+v", d.Report)
	}
	ctx, cancel = context.WithCancel(w.ctx)
	defer cancel()
	go w.Engine.RunDriftSchedules(ctx, func() bool { return true }, 5*time.Millisecond)
	eventually(t, "a scheduled drift report", func() bool {
		d, _ := w.Store.GetDrift(w.ctx, name)
		return d.Report != nil
	})
	d, _ := w.Store.GetDrift(w.ctx, name)
	first := d.Report.RunID
	// Not due again within the hour.
	time.Sleep(50 * time.Millisecond)
	d, _ = w.Store.GetDrift(w.ctx, name)
	if d.Report.RunID != first {
		t.Errorf("a drift check ran again before it was due")
	}
	due := engine.DriftDue([]store.Drift{d}, d.Report.CheckedAt.Add(time.Hour))
	if len(due) != 1 {
		t.Errorf("not due after the interval: %v", due)
	}
}
