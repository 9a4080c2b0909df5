package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// scope is where a task list runs: the candidate hosts (the incarnation's
// members at the top, the hosts of a block's wave inside it), the per-host
// activations carrying the enclosing blocks' vars, and the enclosing wave.
type scope struct {
	hosts []string
	acts  map[string]*expr.Activation
	wave  int
	// handler is set inside a block that runs as an onfail handler after
	// the run failed: its tasks run normally.
	handler bool
	// top is the scenario's own task list: its hosts follow the members,
	// which a cloud step may change (SPEC §10.6).
	top bool
}

func (r *runner) topScope() scope { return scope{hosts: r.members, top: true} }

// walk runs tasks in order. Once the run failed (fail-fast), only onfail
// handlers (and blocks holding some) still start.
func (r *runner) walk(ctx context.Context, tasks []*dsl.Task, sc scope) {
	for _, t := range tasks {
		if ctx.Err() != nil {
			return
		}
		if r.failed() && !sc.handler && !holdsHandler(t) {
			continue
		}
		if sc.top {
			sc.hosts = r.currentMembers()
		}
		r.task(ctx, t, sc)
	}
}

// holdsHandler reports whether t is an onfail handler or a block holding
// one.
func holdsHandler(t *dsl.Task) bool {
	if len(t.Onfail) > 0 {
		return true
	}
	return slices.ContainsFunc(t.Block, holdsHandler)
}

// task resolves t's target and runs it wave by wave: waves strictly one
// after another, and a failure stops the rollout (later waves never start).
func (r *runner) task(ctx context.Context, t *dsl.Task, sc scope) {
	afterFailure := r.failed() && !sc.handler
	// The registers inside a block exist even when the block runs on no
	// host or is skipped everywhere: they are empty (SPEC §7).
	executor.DeclareNested(r.base.Registers, t)
	tg := r.target(ctx, t, sc)
	name := executor.TaskName(t)
	ctx, span := r.taskSpan(ctx, name, t.Path, len(tg.hosts))
	defer span.End()
	why, note := "", ""
	if len(tg.hosts) == 0 && len(tg.errs) == 0 {
		note = noHostNote(t, tg.count)
		why = fmt.Sprintf("task %q ran on no host: %s", name, note)
		// The run record says so for that step (SPEC §6).
		r.recordNote(ctx, t, note)
	}
	// The event of a step that targets nothing says why (SPEC §6).
	r.emit(Event{Type: EventTask, Path: t.Path, Task: name, Hosts: tg.hosts, Error: why})
	if len(tg.errs) > 0 {
		// where: could not be evaluated: the task fails on those hosts
		// before anything is dispatched anywhere.
		rows := make([]store.HostResult, 0, len(tg.errs))
		sids := slices.Sorted(maps.Keys(tg.errs))
		now := r.e.now()
		for _, sid := range sids {
			res := domain.Result{Failed: true, Msg: "where: " + tg.errs[sid]}
			r.setResult(t, sid, res)
			rows = append(rows, r.row(t, sid, max(sc.wave, 1), res, now, now))
		}
		r.record(rows)
		r.fail(fmt.Sprintf("task %q: where: could not be evaluated on %s: %s", name, strings.Join(sids, ", "), tg.errs[sids[0]]))
		return
	}
	if len(tg.hosts) == 0 {
		// An empty register is a value (SPEC §7): size 0, hosts {}.
		if t.Register != "" {
			r.base.Registers.Empty(t.Register, why)
		}
		return
	}
	serial := t.Serial != nil && !afterFailure
	waves := [][]string{tg.hosts}
	if serial {
		waves = dsl.Waves(t.Serial, tg.hosts)
	}
	for i, hosts := range waves {
		if ctx.Err() != nil || (i > 0 && r.failed()) {
			return
		}
		wave := max(sc.wave, 1)
		if serial {
			wave = i + 1
			if r.resumeWave(t, hosts) {
				continue // finished in the run this one resumes
			}
			r.emit(Event{Type: EventWave, Path: t.Path, Task: name, Wave: wave, Hosts: hosts})
		}
		wctx, wspan := r.waveSpan(ctx, wave, len(hosts))
		if t.Block != nil {
			r.block(wctx, t, hosts, wave, sc, tg.count)
		} else {
			r.step(wctx, t, hosts, wave, sc, tg.count)
		}
		wspan.End()
		if lost := r.lost(hosts); len(lost) > 0 && i < len(waves)-1 {
			// A host that vanished mid-rollout (say, it never came back
			// from a restart) stops the rollout like a failure: the later
			// waves never get the task, so nothing after it may run.
			r.fail(fmt.Sprintf("rollout of %q stopped after wave %d of %d: %s unreachable", name, wave, len(waves), strings.Join(lost, ", ")))
			return
		}
	}
}

// noHostNote says why task t targeted no host; count is how many hosts
// its on: matched before where: filtered them.
func noHostNote(t *dsl.Task, count int) string {
	switch {
	case count == 0 && t.On != nil && len(t.On.Covens) > 0:
		return fmt.Sprintf("on: [%s] matched no member of this incarnation", strings.Join(t.On.Covens, ", "))
	case count == 0 && t.On != nil:
		return "on: matched no member of this incarnation"
	case count == 0:
		return "the step targets no host"
	default:
		return "where: was false on every host"
	}
}

// recordNote stores note for task t in the run record. A store failure
// loses only the note (the task event said it already): it is logged.
func (r *runner) recordNote(ctx context.Context, t *dsl.Task, note string) {
	n := store.RunNote{RunID: r.run.ID, Seq: r.seq[t], Path: t.Path, TaskName: executor.TaskName(t), Note: note}
	if err := r.e.cfg.Store.RecordRunNote(context.WithoutCancel(ctx), n); err != nil {
		r.e.log.ErrorContext(ctx, "recording a run note failed", "apply_id", r.run.ID, "task", n.TaskName, "err", err)
	}
}

// lost lists the hosts of sids that became unreachable in this run.
func (r *runner) lost(sids []string) []string {
	var out []string
	for _, sid := range sids {
		if r.isUnreachable(sid) {
			out = append(out, sid)
		}
	}
	return out
}

// target is a task's resolved target.
type target struct {
	hosts []string // sorted by SID
	count int      // incarnation.host_count: after on:, before where:
	errs  map[string]string
}

// target resolves on → where → run_once (SPEC §6). on: narrows the scope's
// hosts (never anything outside the incarnation's members) or names the
// keeper; hosts lost earlier in the run are gone; where: filters per host
// with live data; run_once keeps the first SID.
func (r *runner) target(ctx context.Context, t *dsl.Task, sc scope) target {
	var base []string
	switch {
	case t.On != nil && t.On.Keeper:
		base = []string{dispatch.KeeperSID}
	case t.On != nil:
		for _, sid := range sc.hosts {
			if h := r.hosts[sid]; h != nil && hasAll(h.covens, t.On.Covens) {
				base = append(base, sid)
			}
		}
	default:
		base = sc.hosts
	}
	tg := target{count: len(base)}
	for _, sid := range base {
		if !r.isUnreachable(sid) {
			tg.hosts = append(tg.hosts, sid)
		}
	}
	if t.Where != "" && len(tg.hosts) > 0 {
		prog, cerr := r.env.CompileBool(t.Where)
		var kept []string
		for _, sid := range tg.hosts {
			ok, err := false, cerr
			if err == nil {
				ok, err = prog.EvalBool(ctx, r.activation(ctx, sc, sid, tg.count))
			}
			switch {
			case err != nil:
				if tg.errs == nil {
					tg.errs = map[string]string{}
				}
				tg.errs[sid] = err.Error()
			case ok:
				kept = append(kept, sid)
			}
		}
		tg.hosts = kept
	}
	if t.RunOnce && len(tg.hosts) > 1 {
		tg.hosts = tg.hosts[:1]
	}
	return tg
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// activation is host sid's activation for a task whose step targets count
// hosts: the scope's (enclosing block vars included) or the run's base
// with the scenario's vars.yml rendered for the host.
func (r *runner) activation(ctx context.Context, sc scope, sid string, count int) *expr.Activation {
	var a expr.Activation
	if p := sc.acts[sid]; p != nil {
		a = *p
	} else {
		a = *r.hostActivation(ctx, sid)
	}
	inc := maps.Clone(a.Incarnation)
	inc["host_count"] = int64(count)
	a.Incarnation = inc
	return &a
}

// hostActivation is the base activation for one host: soulprint.self and
// the current SID (none for the keeper: register then resolves only when a
// single host has a result) and vars.yml.
func (r *runner) hostActivation(ctx context.Context, sid string) *expr.Activation {
	a := r.base
	if h := r.hosts[sid]; h != nil {
		a.CurrentSID = sid
		a.Soulprint.Self = h.facts
	} else {
		a.Soulprint.Self = map[string]any{}
	}
	a.Vars = r.scenarioVars(ctx, &a)
	return &a
}

// scenarioVars renders vars.yml for one host. vars.yml may read registers
// of any task, so an entry that cannot be rendered yet is left out (an
// expression using it then fails naming it).
//
// The scenario's vars_files are resolved for the host and win over
// vars.yml. A host none of whose alternatives exists gets no values from
// them; the error is kept and fails the host's next task (attempt).
func (r *runner) scenarioVars(ctx context.Context, a *expr.Activation) map[string]any {
	if len(r.sc.Vars) == 0 && len(r.sc.VarsFiles) == 0 {
		return nil
	}
	c := *a
	c.Vars = nil
	out := make(map[string]any, len(r.sc.Vars))
	for k, v := range r.sc.Vars {
		if rv, err := r.env.Render(ctx, v, &c); err == nil {
			out[k] = rv
		}
	}
	if len(r.sc.VarsFiles) > 0 {
		fv, err := executor.VarsFromFiles(ctx, r.env, r.sc.VarsFiles, &c)
		if err != nil {
			r.setVarsErr(a.CurrentSID, err.Error())
		}
		maps.Copy(out, fv)
	}
	return out
}

// setVarsErr keeps why host sid's scenario vars_files did not resolve
// (nothing for no host: the keeper or state_changes).
func (r *runner) setVarsErr(sid, msg string) {
	if sid == "" || sid == dispatch.KeeperSID {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.varsErr == nil {
		r.varsErr = map[string]string{}
	}
	r.varsErr[sid] = msg
}

// varsErrOf is why host sid's scenario vars_files did not resolve ("" =
// they did).
func (r *runner) varsErrOf(sid string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.varsErr[sid]
}
