package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/store"
)

// taskIndex is what a scenario's results are keyed by: the tasks numbered
// in pre-order (the Seq of their results), the pending-trigger key of each
// onchanges handler, and the task of each register.
type taskIndex struct {
	sc         *dsl.Scenario
	seq        map[*dsl.Task]int
	bySeq      []*dsl.Task
	keys       map[*dsl.Task]string
	registered map[string]*dsl.Task
}

func indexScenario(sc *dsl.Scenario) *taskIndex {
	x := &taskIndex{sc: sc, seq: map[*dsl.Task]int{}, keys: map[*dsl.Task]string{}, registered: map[string]*dsl.Task{}}
	var walk func([]*dsl.Task)
	walk = func(ts []*dsl.Task) {
		for _, t := range ts {
			x.seq[t] = len(x.bySeq)
			x.bySeq = append(x.bySeq, t)
			if len(t.Onchanges) > 0 {
				x.keys[t] = TriggerKey(sc, t)
			}
			if t.Register != "" {
				x.registered[t.Register] = t
			}
			walk(t.Block)
		}
	}
	walk(sc.Tasks)
	return x
}

// task returns the task numbered seq if it is at path (a result recorded
// against another version of the scenario is nobody's).
func (x *taskIndex) task(seq int, path string) *dsl.Task {
	if seq < 0 || seq >= len(x.bySeq) || x.bySeq[seq].Path != path {
		return nil
	}
	return x.bySeq[seq]
}

// resultFunc looks up a run's final result of task t on host sid.
type resultFunc func(t *dsl.Task, sid string) (domain.Result, bool)

// hostTrigger is a pending trigger of one handler (by its key) on one host.
type hostTrigger struct{ key, sid string }

// settle decides the pending onchanges triggers a normal run leaves (SPEC
// §8.3), from its final per-host results on hosts: a trigger pending for a
// handler that succeeded on its host is cleared; when the run did not
// succeed, every handler owed to a host — a task it watches changed there,
// or a trigger was pending — that did not succeed there is added, so the
// next run of the scenario fires it even if nothing changes then. The
// runner settles at its end; Recover settles the runs a crash aborted
// (pending nil: their triggers are only added to), and late results the
// runs they arrive for.
func (x *taskIndex) settle(hosts []string, pending map[string]map[string]bool, runFailed bool, result resultFunc) (add, clear []hostTrigger) {
	for _, t := range x.bySeq {
		key, ok := x.keys[t]
		if !ok {
			continue
		}
		for _, sid := range hosts {
			res, ran := result(t, sid)
			served := ran && !res.Failed && !res.Skipped && !res.Unreachable
			owed := pending[key][sid]
			switch {
			case served && owed:
				clear = append(clear, hostTrigger{key, sid})
			case !served && runFailed && (owed || x.watchedChanged(t, sid, result)):
				add = append(add, hostTrigger{key, sid})
			}
		}
	}
	return add, clear
}

// watchedChanged reports whether a task handler t watches changed on sid
// (what its register there says: an unreachable host has no entry).
func (x *taskIndex) watchedChanged(t *dsl.Task, sid string, result resultFunc) bool {
	for _, n := range t.Onchanges {
		w := x.registered[n]
		if w == nil {
			continue
		}
		if res, ok := result(w, sid); ok && res.Changed && !res.Unreachable {
			return true
		}
	}
	return false
}

// storedResults is a resultFunc over a run's stored results.
func (x *taskIndex) storedResults(rows []store.HostResult) resultFunc {
	byTask := map[*dsl.Task]map[string]domain.Result{}
	for _, row := range rows {
		t := x.task(row.Seq, row.Path)
		if t == nil {
			continue
		}
		if byTask[t] == nil {
			byTask[t] = map[string]domain.Result{}
		}
		st := domain.HostStatus(row.Status)
		byTask[t][row.SID] = domain.Result{
			Changed:     row.Changed,
			Failed:      st == domain.StatusFailed,
			Skipped:     st == domain.StatusSkipped,
			Unknown:     st == domain.StatusUnknown,
			Unreachable: st == domain.StatusUnreachable,
		}
	}
	return func(t *dsl.Task, sid string) (domain.Result, bool) {
		res, ok := byTask[t][sid]
		return res, ok
	}
}

// addOwedTriggers records the handlers a run that did not succeed left
// owed according to its stored results (a run aborted by a crash, or one
// whose late results arrived after it ended). Triggers are only added:
// one already pending stays until a run serves it.
func (e *Engine) addOwedTriggers(ctx context.Context, run store.Run, inc store.Incarnation, x *taskIndex) (int, error) {
	rows, err := e.cfg.Store.ListResults(ctx, run.ID)
	if err != nil {
		return 0, fmt.Errorf("reading the results of run %s: %w", run.ID, err)
	}
	hosts := slices.Sorted(slices.Values(inc.Members))
	add, _ := x.settle(hosts, nil, true, x.storedResults(rows))
	if len(add) == 0 {
		return 0, nil
	}
	if err := e.cfg.Store.AddTriggers(ctx, pendingTriggers(run, add, e.now())); err != nil {
		return 0, fmt.Errorf("recording the pending triggers of run %s: %w", run.ID, err)
	}
	return len(add), nil
}

// pendingTriggers are the stored form of the triggers run leaves.
func pendingTriggers(run store.Run, add []hostTrigger, at time.Time) []store.PendingTrigger {
	ts := make([]store.PendingTrigger, len(add))
	for i, a := range add {
		ts[i] = store.PendingTrigger{
			Incarnation: run.Incarnation, Scenario: run.Scenario, Task: a.key, SID: a.sid, RunID: run.ID, CreatedAt: at,
		}
	}
	return ts
}

// scenarioOf loads the service and scenario of a run at its incarnation's
// commit (sc is nil when the service has no such scenario: a create run of
// a service without one).
func (e *Engine) scenarioOf(ctx context.Context, run store.Run) (inc store.Incarnation, svc *dsl.Service, sc *dsl.Scenario, err error) {
	inc, err = e.cfg.Store.GetIncarnation(ctx, run.Incarnation)
	if err != nil {
		return inc, nil, nil, fmt.Errorf("incarnation %s: %w", run.Incarnation, err)
	}
	svc, err = e.cfg.Services.Open(ctx, inc.Service, inc.Commit)
	if err != nil {
		return inc, nil, nil, fmt.Errorf("opening service %s at %s: %w", inc.Service, inc.Commit, err)
	}
	return inc, svc, svc.Scenarios[run.Scenario], nil
}

// settleAborted records the handlers owed by a run aborted by the
// keeper's crash, as the runner would have had the run failed: a handler
// is not lost because the keeper died between the change and the handler.
func (e *Engine) settleAborted(ctx context.Context, run store.Run) error {
	if run.Check {
		return nil
	}
	inc, _, sc, err := e.scenarioOf(ctx, run)
	if err != nil || sc == nil {
		return err
	}
	n, err := e.addOwedTriggers(ctx, run, inc, indexScenario(sc))
	if n > 0 {
		e.log.WarnContext(ctx, "handlers owed by the aborted run recorded as pending triggers", "apply_id", run.ID, "count", n)
	}
	return err
}
