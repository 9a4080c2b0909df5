package engine

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
)

// checkDelegates refuses a run whose scenario delegates a task to covens
// no member of the incarnation carries (SPEC §9): a drain that cannot run
// anywhere must not let the rollout go on. members are the incarnation's.
func (e *Engine) checkDelegates(ctx context.Context, sc *dsl.Scenario, incarnation string, members []string) error {
	var uses []*dsl.Task
	var walk func([]*dsl.Task)
	walk = func(ts []*dsl.Task) {
		for _, t := range ts {
			if t.Delegate != nil {
				uses = append(uses, t)
			}
			walk(t.Block)
		}
	}
	walk(sc.Tasks)
	if len(uses) == 0 {
		return nil
	}
	souls, err := e.cfg.Store.GetSoulsBrief(ctx, members)
	if err != nil {
		return fmt.Errorf("reading the members' covens: %w", err)
	}
	var problems []string
	for _, t := range uses {
		found := false
		for _, s := range souls {
			if hasAll(s.Covens, t.Delegate.Covens) {
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: delegate: [%s] matches no member of incarnation %s: add a soul carrying those covens to the incarnation (members are the souls carrying its covens), or fix the coven names",
				t.Delegate.Pos, strings.Join(t.Delegate.Covens, ", "), incarnation))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return domain.Errorf(domain.CodeUnprocessable, "%s", strings.Join(problems, "; "))
}

// delegates are the members that run delegated task t: every member of the
// incarnation carrying all of its delegate covens, sorted by SID.
func (r *runner) delegates(t *dsl.Task) []string {
	var out []string
	for _, sid := range r.members {
		if h := r.hosts[sid]; h != nil && hasAll(h.covens, t.Delegate.Covens) {
			out = append(out, sid)
		}
	}
	return out
}

// delegated runs task t for wave host sid on each delegate in turn (SPEC
// §9): with the wave host's activation (its vars, block vars and loop),
// but soulprint.self and register.self of the delegate, and delegated_for
// = {sid, soulprint} of the wave host. The result is the wave host's (its
// row, its register), with one entry per delegate in Tasks and the
// delegates' SIDs in data.delegated_to; failed_when and changed_when are
// applied per delegate, where delegated_for is set.
func (r *runner) delegated(ctx context.Context, t *dsl.Task, sid string, wave int, act *expr.Activation) domain.Result {
	ds := r.delegates(t)
	if len(ds) == 0 {
		return domain.Result{Failed: true, Msg: fmt.Sprintf("delegate: [%s] matches no member of this incarnation", strings.Join(t.Delegate.Covens, ", "))}
	}
	var wave0 map[string]any
	if h := r.hosts[sid]; h != nil {
		wave0 = h.facts
	}
	forHost := map[string]any{"sid": sid, "soulprint": wave0}
	results := make([]domain.Result, len(ds))
	for i, d := range ds {
		if ctx.Err() != nil {
			results[i] = domain.Result{Failed: true, Msg: "cancelled before it ran on " + d}
			continue
		}
		if r.isUnreachable(d) {
			results[i] = domain.Result{Failed: true, Msg: "the delegate " + d + " was lost earlier in this run"}
			continue
		}
		a := *act
		a.CurrentSID = d
		a.Soulprint.Self = r.hosts[d].facts
		a.DelegatedFor = forHost
		res := executor.Attempt(ctx, t, &a, executor.Options{
			Env:            r.env,
			Check:          r.run.Check,
			Call:           r.delegateCaller(t, d, wave),
			Files:          r.sc.Files,
			Modules:        r.svc.Modules,
			DefaultTimeout: r.e.cfg.DefaultTimeout,
			MaxLoopItems:   r.e.cfg.MaxLoopItems,
			Sleep:          r.e.cfg.Sleep,
			Taint:          r.taint(ctx, &a),
		})
		results[i] = executor.Finalize(ctx, t, &a, res, r.env)
	}
	return combineDelegated(t, ds, results)
}

// delegateCaller dispatches t's module calls to delegate d. Several wave
// hosts use the same delegate in one wave, so the attempt numbers (part
// of the task id) count per task and delegate across all of them.
func (r *runner) delegateCaller(t *dsl.Task, d string, wave int) executor.Caller {
	return func(ctx context.Context, call dispatch.Call, check bool, timeout time.Duration) domain.Result {
		return r.dispatch(ctx, t, d, wave, dispatch.Work{Check: check, Timeout: timeout, Call: &call}, r.nextAttempt(t, d))
	}
}

// nextAttempt reserves the next attempt number of t on host sid.
func (r *runner) nextAttempt(t *dsl.Task, sid string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts[t] == nil {
		r.attempts[t] = map[string]int64{}
	}
	r.attempts[t][sid]++
	return r.attempts[t][sid]
}

// combineDelegated is the wave host's result of a delegated task: changed
// or failed when it was on any delegate, skipped when on all; one delegate's
// output is the result's own, several are in Tasks only.
func combineDelegated(t *dsl.Task, ds []string, results []domain.Result) domain.Result {
	var out domain.Result
	if len(results) == 1 {
		out = results[0]
	} else {
		out.Skipped = true
		for _, res := range results {
			out.DurationMS += res.DurationMS
			out.Skipped = out.Skipped && res.Skipped
			out.Unknown = out.Unknown || res.Unknown
		}
	}
	out.Changed, out.Failed, out.Unreachable = false, false, false
	var msgs []string
	for i, res := range results {
		out.Changed = out.Changed || res.Changed
		if res.Failed || res.Unreachable {
			out.Failed = true
			if out.RC == 0 {
				out.RC = res.RC
			}
		}
		if res.Msg != "" && (len(results) == 1 || res.Failed || res.Unreachable) {
			msgs = append(msgs, "on "+ds[i]+": "+res.Msg)
		}
		out.Tasks = append(out.Tasks, domain.TaskResult{Name: "on " + ds[i], Module: t.Module, Result: res})
	}
	if out.Failed || out.Changed {
		out.Skipped = false
	}
	out.Msg = strings.Join(msgs, "; ")
	data := maps.Clone(out.Data)
	if data == nil {
		data = map[string]any{}
	}
	to := make([]any, len(ds))
	for i, d := range ds {
		to[i] = d
	}
	data["delegated_to"] = to
	out.Data = data
	return out
}
