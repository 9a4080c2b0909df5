package checker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Step-log kinds (store.CheckerLogLine.Kind).
const (
	LogTask      = "task"
	LogCondition = "condition"
	LogAttempt   = "attempt"
	LogAction    = "action"
	LogAPICall   = "apicall"
	LogStderr    = "stderr"
	LogParse     = "parse"
	LogDeps      = "deps"
	LogMessage   = "log"
	LogError     = "error"
)

// errExit ends a task successfully at once (handler _exit).
var errExit = errors.New("_exit")

// timeoutError is the cancel cause of a task whose config.timeout passed.
type timeoutError struct{ taskID, after string }

func (e *timeoutError) Error() string { return "task timed out after " + e.after }

// parentEnded is the cancel cause of a sub-task whose parent was cancelled
// or timed out.
type parentEnded struct {
	parentID, status string
}

func (e *parentEnded) Error() string {
	return fmt.Sprintf("cancelled because parent task %s ended %s", e.parentID, e.status)
}

// run is the state of one task while it runs. Only the task's goroutine
// touches it.
type run struct {
	c        *Checker
	ctx      context.Context
	proc     *Procedure
	task     store.CheckerTask
	vars     map[string]any
	deps     []dep
	waited   int       // deps[:waited] have reached a terminal status
	depsStep string    // the step that last pushed into @deps
	step     string    // the step running now ("" before and after the steps)
	deadline time.Time // config.timeout; zero = none
	expire   func()    // cancels the task as timed out
	message  string    // last user log line: the task's task_message
	// secrets are the values of secret vars seen so far, masked in all
	// the task stores (see secret.go).
	secrets    []string
	secretSeen map[string]bool
	// work and logRows count the task's work and step-log rows against
	// the Checker's bounds (N6).
	work, logRows int
}

// WorkLimitError fails a task that reached one of its work bounds.
type WorkLimitError struct {
	What  string // "work" or "step-log rows"
	Limit int
	Key   string // the Keeper config key that sets the bound
}

func (e *WorkLimitError) Error() string {
	return fmt.Sprintf("the task reached its bound of %d %s (steps × attempts × commands per apicall); raise %s in the Keeper config, or make the procedure poll less (fewer attempts, a longer interval, fewer parallel commands)", e.Limit, e.What, e.Key)
}

// spend counts n units of work, failing the task once its bounds are
// reached, before the work is done.
func (r *run) spend(n int) error {
	if r.logRows >= r.c.maxLogRows {
		return &WorkLimitError{What: "step-log rows", Limit: r.c.maxLogRows, Key: "checker.max_task_log_rows"}
	}
	if r.work+n > r.c.maxWork {
		return &WorkLimitError{What: "units of work", Limit: r.c.maxWork, Key: "checker.max_task_work"}
	}
	r.work += n
	return nil
}

// run executes task t of proc and records its outcome.
func (c *Checker) run(ctx context.Context, proc *Procedure, t store.CheckerTask) {
	r := &run{c: c, ctx: ctx, proc: proc, task: t, vars: map[string]any{}}
	for _, v := range proc.Vars {
		r.vars[v.Name] = v.Default
	}
	for k, v := range t.Vars {
		r.vars[k] = v
	}
	r.vars[VarDeps] = []any{}
	r.vars[VarDepsStatus] = []any{}
	r.rememberSecrets()

	now := c.clock.Now()
	r.task.Status, r.task.StartedAt, r.task.KeeperID = StatusRunning, &now, c.keeperID
	r.save()
	c.metrics.taskStarted()

	d := proc.Config.Timeout
	if d <= 0 {
		d = c.defaultTimeout // L3: no task runs unbounded
	}
	if d > 0 {
		tctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		r.ctx = tctx
		r.deadline = now.Add(d)
		r.expire = func() { cancel(&timeoutError{taskID: t.ID, after: d.String()}) }
		// The timer covers waits that are not the task's own sleeps
		// (commands, sub-tasks); sleeps stop at the deadline themselves.
		stop := make(chan struct{})
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			select {
			case <-c.clock.After(d):
				r.expire()
			case <-stop:
			}
		}()
		defer func() {
			close(stop)
			<-exited
		}()
	}
	if err := r.loadSecrets(); err != nil {
		r.finish(err)
		return
	}
	r.finish(r.steps())
}

// sleep waits d on the Clock, or until the task's deadline when that comes
// first — then the task times out exactly at its deadline.
func (r *run) sleep(d time.Duration) error {
	if !r.deadline.IsZero() {
		if left := r.deadline.Sub(r.c.clock.Now()); left <= d {
			if err := r.c.clock.Sleep(r.ctx, max(left, 0)); err != nil {
				return err
			}
			r.expire()
			return r.ctx.Err()
		}
	}
	return r.c.clock.Sleep(r.ctx, d)
}

// steps runs the steps in order, waiting for new @deps between them.
func (r *run) steps() error {
	r.logf("", LogTask, nil, "task %s of procedure %s started", r.task.ID, r.proc.Name)
	for _, s := range r.proc.Steps {
		if err := r.waitDeps(); err != nil {
			return err
		}
		if r.proc.Config.RunOnVIP && !r.c.isLeader() {
			return fmt.Errorf("this keeper is no longer the leader; a run-on-vip task stops here (before step %s)", s.Name)
		}
		r.step = s.Name
		if err := r.runStep(s); err != nil {
			return err
		}
	}
	r.step = ""
	return r.waitDeps()
}

// finish classifies the outcome, persists it and, when the task was
// cancelled or timed out, cancels its running sub-tasks.
func (r *run) finish(err error) {
	status, runErr := StatusSuccess, ""
	if errors.Is(err, errExit) {
		err = nil
	}
	if err != nil {
		status, runErr = StatusFailure, err.Error()
		if cause := context.Cause(r.ctx); r.ctx.Err() != nil && cause != nil {
			var te *timeoutError
			var pe *parentEnded
			switch {
			case errors.As(cause, &te) && te.taskID == r.task.ID:
				status, runErr = StatusTimeout, cause.Error()
			case errors.Is(cause, errCancelled), errors.As(cause, &pe):
				status, runErr = StatusCancelled, cause.Error()
			case errors.As(cause, &te):
				status, runErr = StatusCancelled, "cancelled: a parent task "+cause.Error()
			default:
				runErr = cause.Error()
			}
		}
	}
	if status == StatusCancelled || status == StatusTimeout {
		r.c.cancelChildren(r.task.ID, &parentEnded{parentID: r.task.ID, status: status})
	}
	if runErr != "" {
		r.logf(r.step, LogError, nil, "%s", runErr)
	}
	r.logf("", LogTask, nil, "task ended %s", status)
	now := r.c.clock.Now()
	r.task.Status, r.task.RunError, r.task.Message, r.task.FinishedAt = status, r.mask(runErr), r.mask(r.message), &now
	r.save()
	r.c.metrics.taskEnded(status)
}

// save persists the task's status fields; it outlives cancellation so the
// final status is always written.
func (r *run) save() {
	ctx := context.WithoutCancel(r.ctx)
	t := r.task
	t.Log = nil
	t.Vars = maskVars(r.proc, t.Vars, r.secrets)
	if err := r.c.store.UpdateCheckerTask(ctx, t); err != nil {
		r.c.log.Error("checker: saving task", "task", t.ID, "err", err)
	}
}

// logf appends a line to the task's step log.
func (r *run) logf(step, kind string, data map[string]any, format string, args ...any) {
	// Past the bound, only the task's own start, end and error lines are
	// written; spend fails the task at its next unit of work.
	if r.logRows >= r.c.maxLogRows && kind != LogTask && kind != LogError {
		return
	}
	r.logRows++
	line := store.CheckerLogLine{Time: r.c.clock.Now(), Step: step, Kind: kind, Message: r.mask(fmt.Sprintf(format, args...)), Data: r.maskData(data)}
	if err := r.c.store.AppendCheckerLog(context.WithoutCancel(r.ctx), r.task.ID, []store.CheckerLogLine{line}); err != nil {
		r.c.log.Error("checker: appending step log", "task", r.task.ID, "err", err)
	}
}

// userLog renders a log: template and records it; the last non-empty one
// becomes the task's task_message.
func (r *run) userLog(step string, t *Template) error {
	if t == nil {
		return nil
	}
	s, err := t.Render(r.vars)
	if err != nil {
		return fmt.Errorf("step %s: log: %w", step, err)
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	r.message = s
	r.logf(step, LogMessage, nil, "%s", s)
	return nil
}

// runStep runs one step: its conditions, then (unless skipped) its action.
func (r *run) runStep(s *Step) error {
	for i, cond := range s.Conditions {
		held, last, err := r.condition(s, i+1, cond)
		if err != nil {
			return fmt.Errorf("step %s: condition %d: %w", s.Name, i+1, err)
		}
		if held {
			continue
		}
		// A command that still failed on the last attempt means the
		// condition could not be evaluated at all (no binding, non-zero
		// exit, output that is not JSON): that is an error of the step,
		// never "not held", so no on-error handler turns it into a
		// success (issue 35: cluster_fencing without platform bindings).
		if ae, ok := last.(*attemptError); ok && ae.attempt == cond.Attempts.Max {
			r.logf(s.Name, LogCondition, nil, "condition %d: the command failed on its last attempt, so the condition could not be evaluated: %v", i+1, ae.err)
			return fmt.Errorf("step %s: condition %d could not be evaluated: its command failed on the last attempt (%d of %d): %v",
				s.Name, i+1, ae.attempt, cond.Attempts.Max, ae.err)
		}
		// AttemptsLimitReached carries the last command error, if any.
		carried := ""
		if last != nil {
			carried = "; last error: " + last.Error()
		}
		switch cond.OnError[ErrAttemptsLimitReached] {
		case HandlerExit:
			r.logf(s.Name, LogCondition, nil, "condition %d: %s%s → %s: the task ends successfully", i+1, ErrAttemptsLimitReached, carried, HandlerExit)
			return errExit
		case HandlerContinue:
			r.logf(s.Name, LogCondition, nil, "condition %d: %s%s → %s: skipping the action of step %s", i+1, ErrAttemptsLimitReached, carried, HandlerContinue, s.Name)
			return nil
		default:
			return fmt.Errorf("step %s: condition %d not met after %d attempt(s) (%s, no on-error handler)%s",
				s.Name, i+1, cond.Attempts.Max, ErrAttemptsLimitReached, carried)
		}
	}
	if s.Action == nil {
		return nil
	}
	if err := r.action(s); err != nil {
		return fmt.Errorf("step %s: action: %w", s.Name, err)
	}
	return nil
}

// attemptError is a failed command of a condition's attempt, kept as the
// error AttemptsLimitReached carries.
type attemptError struct {
	attempt int
	err     error
}

func (e *attemptError) Error() string { return fmt.Sprintf("attempt %d: %v", e.attempt, e.err) }

// condition evaluates cond up to Attempts.Max times, Interval apart, and
// reports whether it held on Attempts.Min consecutive attempts, with the
// last command error of its attempts (nil when every command answered). A
// command that fails is an attempt that did not hold (SPEC §13): it is
// logged and retried at the next interval.
func (r *run) condition(s *Step, n int, cond *Condition) (bool, error, error) {
	if err := r.userLog(s.Name, cond.Log.Before); err != nil {
		return false, nil, err
	}
	a := cond.Attempts
	held, streak := false, 0
	var last error
	for i := 1; i <= a.Max && !held; i++ {
		if i > 1 && a.Interval > 0 {
			if err := r.sleep(a.Interval); err != nil {
				return false, last, err
			}
		}
		ok, failed, err := r.attempt(s, n, i, cond)
		if err != nil {
			return false, last, err
		}
		if failed != nil {
			last = &attemptError{attempt: i, err: failed}
		}
		r.c.metrics.attempt(ok, failed != nil)
		if ok {
			streak++
		} else {
			streak = 0
		}
		held = streak >= a.Min
	}
	if err := r.userLog(s.Name, cond.Log.After); err != nil {
		return false, last, err
	}
	return held, last, nil
}

// attempt evaluates cond once and logs what every filter returned. A
// command that failed is returned as failed (the attempt did not hold);
// err is anything else that ends the step.
func (r *run) attempt(s *Step, n, i int, cond *Condition) (held bool, failed, err error) {
	var data any
	cost := 1
	if cond.Calls != nil {
		cost = len(cond.Calls.Commands)
	}
	if err := r.spend(cost); err != nil {
		return false, nil, err
	}
	if cond.Calls != nil {
		data, _, err = r.calls(s.Name, cond.Calls)
		var ce *commandError
		if errors.As(err, &ce) && r.ctx.Err() == nil {
			r.logf(s.Name, LogAttempt, map[string]any{"condition": n, "attempt": i, "error": ce.Error()},
				"condition %d attempt %d/%d: not held (command failed: %s)", n, i, cond.Attempts.Max, ce.Error())
			return false, ce, nil
		}
	} else {
		data, err = cond.Const.Render(r.vars)
	}
	if err != nil {
		return false, nil, err
	}
	all := true
	var results []any
	for _, e := range cond.Expect {
		got, err := e.Filter.Search(data)
		if err != nil {
			return false, nil, err
		}
		want, err := e.Value.Render(r.vars)
		if err != nil {
			return false, nil, err
		}
		ok, err := compare(e.Op, got, want)
		if err != nil {
			return false, nil, fmt.Errorf("filter %q returned %s: %w", e.Filter, toJSON(got), err)
		}
		all = all && ok
		results = append(results, map[string]any{"filter": e.Filter.String(), "op": string(e.Op), "value": want, "got": got, "held": ok})
	}
	verdict := "not held"
	if all {
		verdict = "held"
	}
	r.logf(s.Name, LogAttempt, map[string]any{"condition": n, "attempt": i, "expect": results},
		"condition %d attempt %d/%d: %s (%s)", n, i, cond.Attempts.Max, verdict, describe(results))
	return all, nil, nil
}

func describe(results []any) string {
	parts := make([]string, len(results))
	for i, x := range results {
		m := x.(map[string]any)
		parts[i] = fmt.Sprintf("%s → %s %s %s", m["filter"], toJSON(m["got"]), m["op"], toJSON(m["value"]))
	}
	return strings.Join(parts, "; ")
}

// action runs a step's action: log before, apicalls, parse, log after.
func (r *run) action(s *Step) error {
	a := s.Action
	if err := r.userLog(s.Name, a.Log.Before); err != nil {
		return err
	}
	if a.Calls != nil {
		if err := r.spend(len(a.Calls.Commands)); err != nil {
			return err
		}
		result, src, err := r.calls(s.Name, a.Calls)
		if err != nil {
			return err
		}
		for _, p := range a.Parse {
			if err := r.parse(s.Name, p, result, src); err != nil {
				return err
			}
		}
	}
	return r.userLog(s.Name, a.Log.After)
}

// parse applies one parse rule to an apicall result.
func (r *run) parse(step string, p *ParseRule, result any, src string) error {
	v, err := p.Filter.Search(result)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	if p.Var == VarDeps {
		ids, err := depIDs(v)
		if err != nil {
			return fmt.Errorf("parse %q → push %s: %w", p.Filter, VarDeps, err)
		}
		for _, id := range ids {
			r.deps = append(r.deps, dep{ID: id, Source: src})
		}
		r.vars[VarDeps] = r.depList()
		r.depsStep = step
		r.logf(step, LogParse, map[string]any{"ids": ids, "source": src}, "parse %s → push %s %s", p.Filter, VarDeps, toJSON(ids))
		return nil
	}
	d := r.proc.Var(p.Var)
	switch p.Op {
	case ParseStore:
		if !checkType(d.Type, v) {
			return fmt.Errorf("parse %q → store %s: var is %s, got %s", p.Filter, p.Var, d.Type, shown(d, v))
		}
		r.vars[p.Var] = v
	case ParsePush:
		cur, _ := r.vars[p.Var].([]any)
		next := append([]any{}, cur...)
		items, isList := v.([]any)
		if !isList {
			items = []any{v}
		}
		for _, e := range items {
			if !checkElem(d.Type, e) {
				return fmt.Errorf("parse %q → push %s: var is %s, element %s is not %s", p.Filter, p.Var, d.Type, shown(d, e), d.Type.elemType())
			}
			next = append(next, e)
		}
		r.vars[p.Var] = next
	}
	if d.Secret {
		r.rememberSecrets()
	}
	r.logf(step, LogParse, map[string]any{"var": p.Var, "value": r.vars[p.Var]}, "parse %s → %s %s = %s", p.Filter, p.Op, p.Var, toJSON(r.vars[p.Var]))
	return nil
}
