package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// drainScenario is the load-balancer idiom of SPEC §9: each wave's backend
// is taken out of the balancer on the lb host, restarted, and put back.
const drainScenario = `
tasks:
  - name: rolling
    on: [backend]
    serial: 1
    block:
      - name: drain
        module: core.file.line
        delegate: [lb]
        register: drained
        params:
          path: /etc/lb/drained
          line: "${ delegated_for.sid } ${ delegated_for.soulprint.hostname } via ${ soulprint.self.sid }"
        changed_when: "register.self.changed && delegated_for.sid != ''"
      - name: restart
        module: core.service.restarted
        params: {name: app}
      - name: undrain
        module: core.file.line
        delegate: [lb]
        params:
          path: /etc/lb/drained
          line: "${ delegated_for.sid } ${ delegated_for.soulprint.hostname } via ${ soulprint.self.sid }"
          state: absent
`

const drainHosts = `
hosts:
  - {sid: lb, covens: [web, lb]}
  - {sid: w1, covens: [web, backend], facts: {hostname: web-1}}
  - {sid: w2, covens: [web, backend], facts: {hostname: web-2}}
  - {sid: w3, covens: [web, backend], facts: {hostname: web-3}}
  - {sid: other, covens: [elsewhere, lb2]}
incarnation: {covens: [web]}
`

// TestDelegateDrainsEachWaveOnTheBalancer: the delegated tasks run only on
// the lb, once per wave host, with delegated_for naming that host, in the
// order drain → restart → undrain wave by wave; the results are the wave
// hosts' rows, saying which delegate ran them.
func TestDelegateDrainsEachWaveOnTheBalancer(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/roll/main.yml": drainScenario})
	w := newWorld(t, svc, "roll", drainHosts+`
stubs:
  - {module: core.file.line, result: {changed: true}}
expect:
  outcome: succeeded
  tasks:
    - {task: drain, ran: [w1, w2, w3], changed: [w1, w2, w3], waves: [[w1], [w2], [w3]]}
    - {task: restart, ran: [w1, w2, w3], waves: [[w1], [w2], [w3]]}
    - {task: undrain, ran: [w1, w2, w3], waves: [[w1], [w2], [w3]]}
`)
	run := w.run()
	var order []string
	for _, c := range w.Sim.Calls() {
		switch c.Task {
		case "drain", "undrain":
			if c.SID != "lb" {
				t.Errorf("%s ran on %s, want only the delegate lb", c.Task, c.SID)
			}
			order = append(order, c.Task+" "+fmt.Sprint(c.Params["line"]))
		case "restart":
			order = append(order, "restart "+c.SID)
		}
	}
	var want []string
	for i, h := range []string{"w1", "w2", "w3"} {
		line := fmt.Sprintf("%s web-%d via lb", h, i+1)
		want = append(want, "drain "+line, "restart "+h, "undrain "+line)
	}
	if !slices.Equal(order, want) {
		t.Errorf("calls in order:\n%s\nwant:\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	rows := rowsOf(w.results(run.ID), "0.0")
	if _, ok := rows["lb"]; ok {
		t.Errorf("the delegate has a row of its own: %+v", rows["lb"])
	}
	for _, sid := range []string{"w1", "w2", "w3"} {
		r := rows[sid]
		if fmt.Sprint(r.Data["delegated_to"]) != "[lb]" || !strings.HasPrefix(fmt.Sprint(r.Data["tasks"]), "[map[") || !strings.Contains(fmt.Sprint(r.Data["tasks"]), "on lb") {
			t.Errorf("drain row of %s: data %v, want delegated_to [lb] and the delegate's result", sid, r.Data)
		}
	}

	// Check mode: the delegates are asked in check mode, nothing else.
	w.Sim.SetStubs(nil)
	before := len(w.Sim.Calls())
	if run := w.again(nil, true); run.Status != store.RunSucceeded {
		t.Fatalf("check run: %s %s", run.Status, run.Error)
	}
	for _, c := range w.Sim.Calls()[before:] {
		if !c.Check {
			t.Errorf("check run: %s on %s was not in check mode", c.Task, c.SID)
		}
		if (c.Task == "drain" || c.Task == "undrain") && c.SID != "lb" {
			t.Errorf("check run: %s on %s", c.Task, c.SID)
		}
	}
}

// TestDelegateFailureStopsTheRollout: the balancer refusing to drain the
// second wave's host fails that host's drain, so it is never restarted and
// the third wave never starts.
func TestDelegateFailureStopsTheRollout(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/roll/main.yml": drainScenario})
	w := newWorld(t, svc, "roll", drainHosts+`
stubs:
  - module: core.file.line
    task: drain
    results:
      - {changed: true}
      - {failed: true, msg: "no such server"}
expect:
  outcome: failed
  error: "on lb: no such server"
  tasks:
    - {task: drain, ran: [w1, w2], failed: [w2]}
    - {task: restart, ran: [w1]}
    - {task: undrain, ran: [w1]}
`)
	w.run()
}

// TestDelegateCovensAreChecked: a delegate coven nothing carries, and one
// no member of the incarnation carries, refuse the run before it starts,
// naming the file and line.
func TestDelegateCovensAreChecked(t *testing.T) {
	for name, tc := range map[string]struct{ coven, want string }{
		"unknown":    {"lbb", `unknown coven "lbb" in scenario/roll/main.yml:8:20 (did you mean lb?)`},
		"not member": {"lb2", "scenario/roll/main.yml:8:19: delegate: [lb2] matches no member of incarnation test"},
	} {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(drainScenario, "delegate: [lb]", "delegate: ["+tc.coven+"]", 1)
			svc := loadService(t, map[string]string{"scenario/roll/main.yml": src})
			w := newWorld(t, svc, "roll", drainHosts+"expect: {outcome: succeeded}\n")
			_, err := w.Start(w.ctx)
			var de *domain.Error
			if !errorsAs(err, &de) || de.Code != domain.CodeUnprocessable || !strings.Contains(de.Message, tc.want) {
				t.Fatalf("start: %v, want a 422 saying %q", err, tc.want)
			}
			if n := len(w.Sim.Calls()); n != 0 {
				t.Errorf("%d calls dispatched", n)
			}
		})
	}
}

// TestLateResultOfDelegatedWork: the balancer answers the drain after the
// task timed out. The answer is not recorded as a row of the balancer
// (which never ran the task for itself); the wave host keeps the timeout.
func TestLateResultOfDelegatedWork(t *testing.T) {
	src := strings.Replace(drainScenario, "        register: drained\n", "        register: drained\n        timeout: 100ms\n", 1)
	svc := loadService(t, map[string]string{"scenario/roll/main.yml": src})
	w := newWorld(t, svc, "roll", drainHosts+"expect: {outcome: failed}\n")
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.file.line", Hang: true}})
	d := &tap{Dispatcher: w.Sim}
	k := w.keeperProcess(d)
	id, err := k.StartRun(w.ctx, "test", "roll", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	lateID := d.taskID(t, "lb", "drain")
	run, err := k.Wait(w.ctx, id)
	if err != nil || run.Status != store.RunFailed {
		t.Fatalf("run %+v %v, want failed", run, err)
	}
	k.RecordLate("lb", id, lateID, domain.Result{Changed: true})
	if err := k.Close(w.ctx); err != nil { // records what is queued
		t.Fatal(err)
	}
	rows := rowsOf(w.results(id), "0.0")
	if r, ok := rows["lb"]; ok {
		t.Errorf("the delegate got a row of its own from a late result: %+v", r)
	}
	if r := rows["w1"]; r.Status != "failed" || !strings.Contains(r.Msg, "on lb") {
		t.Errorf("w1's drain row = %+v, want the timeout on lb", r)
	}
}

// TestDelegateToSeveralBalancers: with two members of coven lb, each wave
// host's drain runs on both; the row holds one entry per delegate. A
// balancer that drops the connection fails the wave host's drain (the
// wave host itself is fine, so it is failed, not unreachable) and stops the
// rollout.
func TestDelegateToSeveralBalancers(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/roll/main.yml": drainScenario})
	hosts := strings.Replace(drainHosts, "  - {sid: lb, covens: [web, lb]}\n", "  - {sid: lb, covens: [web, lb]}\n  - {sid: lb2, covens: [web, lb]}\n", 1)
	w := newWorld(t, svc, "roll", hosts+`
stubs:
  - {module: core.file.line, task: drain, hosts: [lb2], unreachable: true}
  - {module: core.file.line, result: {changed: true}}
expect:
  outcome: failed
  error: "on lb2:"
  tasks:
    - {task: drain, ran: [w1], failed: [w1], unreachable: []}
  not_run: [restart, undrain]
`)
	run := w.run()
	calls := callsTo(w.Sim.Calls(), "drain")
	if len(calls["lb"]) != 1 || len(calls["lb2"]) != 1 || len(calls) != 2 {
		t.Errorf("drain calls by host: %v, want one on lb and one on lb2", calls)
	}
	r := rowsOf(w.results(run.ID), "0.0")["w1"]
	tasks, _ := r.Data["tasks"].([]any)
	if fmt.Sprint(r.Data["delegated_to"]) != "[lb lb2]" || len(tasks) != 2 || !r.Changed {
		t.Errorf("w1's drain row: changed %v, data %v; want delegated_to [lb lb2], two per-delegate results, changed (lb drained it)", r.Changed, r.Data)
	}
}
