package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// hostRun is one host's part of a step.
type hostRun struct {
	sid        string
	act        *expr.Activation
	res        domain.Result
	row        store.HostResult // as stored
	start, end time.Time
}

// step runs a module or apply task on the hosts of one wave in parallel
// (at most FanOut at once) and waits for all of them: the per-task
// barrier. Each host's result is recorded as it arrives (a keeper that
// dies mid-wave keeps it; see provisional); only at the barrier is
// failed_when applied, because it may read the task's own register across
// hosts (the probe's completeness check), and a result it changes is
// recorded again.
func (r *runner) step(ctx context.Context, t *dsl.Task, hosts []string, wave int, sc scope, count int) {
	if r.replayed(t, hosts) {
		return
	}
	regs := r.base.Registers
	if t.Register != "" {
		regs.Declare(t.Register)
	}
	runs := make([]hostRun, len(hosts))
	sem := make(chan struct{}, r.e.cfg.FanOut)
	var wg sync.WaitGroup
	for i, sid := range hosts {
		h := &runs[i]
		h.sid, h.act = sid, r.activation(ctx, sc, sid, count)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			h.start = r.e.now()
			h.res = r.attempt(ctx, t, h.sid, wave, h.act)
			h.end = r.e.now()
			if t.Register != "" && !h.res.Unreachable {
				regs.Set(t.Register, h.sid, h.res)
			}
			h.row = r.row(t, h.sid, wave, r.provisional(ctx, t, h.act, h.res), h.start, h.end)
			r.rec.add(h.row)
		})
	}
	wg.Wait()

	// Every host's failed_when sees every host's result as answered. A
	// delegated task applied them per delegate, where delegated_for is set.
	for i := range runs {
		h := &runs[i]
		if t.Delegate == nil {
			h.res = executor.Finalize(ctx, t, h.act, h.res, r.env)
		}
		if st := string(h.res.Status()); st != h.row.Status || h.res.Changed != h.row.Changed || h.res.Failed && h.row.Msg != h.res.Msg {
			h.row = r.row(t, h.sid, wave, h.res, h.start, h.end)
			r.rec.add(h.row)
		}
	}
	rows := make([]store.HostResult, 0, len(runs))
	var failedOn []string
	firstMsg := ""
	for i := range runs {
		h := &runs[i]
		if t.Register != "" && !h.res.Unreachable {
			regs.Set(t.Register, h.sid, h.res)
		}
		r.setResult(t, h.sid, h.res)
		if h.res.Failed && !h.res.Unreachable {
			failedOn = append(failedOn, h.sid)
			if firstMsg == "" {
				firstMsg = failReason(h.res)
			}
		}
		rows = append(rows, h.row)
	}
	r.e.cfg.Metrics.hostResults(rows)
	r.rec.flush()
	if len(failedOn) > 0 {
		r.fail(fmt.Sprintf("task %q failed on %s: %s", executor.TaskName(t), strings.Join(failedOn, ", "), firstMsg))
	}
}

// provisional is a host's result as stored when it arrives, before the
// barrier: with changed_when applied (so a probe does not show changed
// meanwhile) but not failed_when, which may need every host's result.
func (r *runner) provisional(ctx context.Context, t *dsl.Task, act *expr.Activation, res domain.Result) domain.Result {
	if t.ChangedWhen == "" || t.Delegate != nil {
		return res
	}
	c := *t
	c.FailedWhen = ""
	return executor.Finalize(ctx, &c, act, res, r.env)
}

// attempt runs t on one host: requisites, then the module (through the
// executor) or the destiny.
func (r *runner) attempt(ctx context.Context, t *dsl.Task, sid string, wave int, act *expr.Activation) domain.Result {
	if reason, ok := r.gate(t, sid); !ok {
		return domain.Result{Skipped: true, Msg: reason}
	}
	if msg := r.varsErrOf(sid); msg != "" {
		return domain.Result{Failed: true, Msg: msg}
	}
	var res domain.Result
	switch {
	case t.Apply != nil:
		res = r.apply(ctx, t, sid, wave, act)
	case t.Delegate != nil:
		res = r.delegated(ctx, t, sid, wave, act)
	default:
		res = executor.Attempt(ctx, t, act, executor.Options{
			Env:            r.env,
			Check:          r.run.Check,
			Call:           r.caller(t, sid, wave),
			Files:          r.sc.Files,
			Modules:        r.svc.Modules,
			DefaultTimeout: r.e.cfg.DefaultTimeout,
			MaxLoopItems:   r.e.cfg.MaxLoopItems,
			Sleep:          r.e.cfg.Sleep,
			Taint:          r.taint(ctx, act),
		})
	}
	if since := r.firedBy(t, sid); since != "" && !res.Skipped {
		res = noteOwed(res, since)
	}
	return res
}

// firedBy returns the run that left handler t owed to host sid when t
// runs there only because of that pending trigger (nothing it watches
// changed in this run), else "".
func (r *runner) firedBy(t *dsl.Task, sid string) string {
	if len(t.Onchanges) == 0 || !r.owed(t, sid) {
		return ""
	}
	for _, n := range t.Onchanges {
		if m, ok := r.base.Registers.Get(n, sid); ok && m["changed"] == true {
			return ""
		}
	}
	if since := r.owedSince[r.keys[t]][sid]; since != "" {
		return since
	}
	return "?"
}

// noteOwed says in a handler's result that a pending trigger fired it
// (SPEC §8.3): data.owed_since and its message.
func noteOwed(res domain.Result, since string) domain.Result {
	data := make(map[string]any, len(res.Data)+1)
	for k, v := range res.Data {
		data[k] = v
	}
	data["owed_since"] = since
	res.Data = data
	note := "fired by a pending trigger: owed since run " + since
	if res.Msg == "" {
		res.Msg = note
	} else {
		res.Msg += " (" + note + ")"
	}
	return res
}

// gate applies t's requisites on host sid against this run's results of
// the named registered tasks on that host (SPEC §5): onfail runs only after
// one of them failed there, require only after all succeeded there,
// onchanges only after one of them changed there — or when a pending
// trigger from an earlier failed run owes the handler to the host (SPEC
// §8.3).
func (r *runner) gate(t *dsl.Task, sid string) (string, bool) {
	regs := r.base.Registers
	if len(t.Onfail) > 0 {
		for _, n := range t.Onfail {
			if m, ok := regs.Get(n, sid); ok && m["failed"] == true {
				return "", true
			}
		}
		return "skipped: onfail: none of " + strings.Join(t.Onfail, ", ") + " failed on this host", false
	}
	for _, n := range t.Require {
		if m, ok := regs.Get(n, sid); !ok || m["failed"] == true {
			return "skipped: require: " + n + " did not succeed on this host", false
		}
	}
	if len(t.Onchanges) == 0 {
		return "", true
	}
	for _, n := range t.Onchanges {
		if m, ok := regs.Get(n, sid); ok && m["changed"] == true {
			return "", true
		}
	}
	if r.owed(t, sid) {
		return "", true
	}
	return "skipped: onchanges: no change in " + strings.Join(t.Onchanges, ", ") + " on this host", false
}

// owed reports whether a pending trigger owes handler t to host sid.
func (r *runner) owed(t *dsl.Task, sid string) bool {
	key, ok := r.keys[t]
	if !ok {
		return false
	}
	return r.pending[key][sid]
}

// caller dispatches the module calls of t on host sid, one Work per call
// (loop items and retries get their own task ids).
func (r *runner) caller(t *dsl.Task, sid string, wave int) executor.Caller {
	var n atomic.Int64
	return func(ctx context.Context, call dispatch.Call, check bool, timeout time.Duration) domain.Result {
		return r.dispatch(ctx, t, sid, wave, dispatch.Work{Check: check, Timeout: timeout, Call: &call}, n.Add(1))
	}
}

// dispatch sends one Work to host sid (or to the keeper-local runner) and
// returns its result.
func (r *runner) dispatch(ctx context.Context, t *dsl.Task, sid string, wave int, w dispatch.Work, attempt int64) (res domain.Result) {
	w.RunID = r.run.ID
	w.TaskID = taskRef{seq: r.seq[t], path: t.Path, wave: wave, sid: sid, attempt: attempt}.id(r.run.ID, r.e.cfg.TaskKey)
	w.Task = executor.TaskName(t)
	ctx, span := r.dispatchSpan(ctx, sid, &w, attempt)
	defer func() { endDispatchSpan(span, res) }()
	r.noteAttempt(t, sid, attempt)
	d := r.e.cfg.Dispatcher
	if sid == dispatch.KeeperSID && r.e.cfg.Cloud != nil && w.Call != nil && IsCloudModule(w.Call.Module) {
		return r.cloud(ctx, w)
	}
	if sid == dispatch.KeeperSID {
		d = r.e.cfg.Local
		if d == nil {
			return domain.Result{Failed: true, RC: -1, Msg: "this keeper has no keeper-side runner for on: keeper tasks"}
		}
	}
	r.e.cfg.Metrics.dispatchStarted()
	res, ok := d.Dispatch(ctx, []dispatch.Request{{SID: sid, Work: w}}, nil)[sid]
	r.e.cfg.Metrics.dispatchDone()
	if !ok {
		return domain.Result{Failed: true, RC: -1, Msg: "the dispatcher returned no result for " + sid}
	}
	return r.awaitReboot(ctx, sid, w, res)
}

// record stores rows of a wave (results decided by the engine itself:
// block outcomes, where: errors) and streams them, before the run goes on.
func (r *runner) record(rows []store.HostResult) {
	if len(rows) == 0 {
		return
	}
	r.e.cfg.Metrics.hostResults(rows)
	r.rec.add(rows...)
	r.rec.flush()
}

// failReason says why a result failed, for the run's error: its message,
// else the last line of stderr, else the exit code.
func failReason(r domain.Result) string {
	if r.Msg != "" {
		return r.Msg
	}
	if s := strings.TrimSpace(r.Stderr); s != "" {
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		return s
	}
	return fmt.Sprintf("rc=%d", r.RC)
}
