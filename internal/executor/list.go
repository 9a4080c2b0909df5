package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
)

// HostRun runs a list of tasks on one host in order, with requisites and
// register (a destiny bundle on a soul, or soul apply --local).
type HostRun struct {
	Options
	// SID is the host's SID: register entries are recorded under it.
	SID string

	failedSoFar bool
	results     map[string]domain.Result // by register name, this run
}

// RunTasks runs tasks on the host with act as the base activation
// (act.Registers receives every registered result). It returns one
// TaskResult per top-level task (block children nested in Tasks) and
// whether any task failed.
func (h *HostRun) RunTasks(ctx context.Context, tasks []*dsl.Task, act *expr.Activation) ([]domain.TaskResult, bool) {
	if h.results == nil {
		h.results = map[string]domain.Result{}
	}
	if act.Registers == nil {
		act.Registers = expr.NewRegisters()
	}
	out := make([]domain.TaskResult, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, h.runTask(ctx, t, act))
	}
	return out, h.failedSoFar
}

func (h *HostRun) runTask(ctx context.Context, t *dsl.Task, act *expr.Activation) domain.TaskResult {
	tr := domain.TaskResult{Name: TaskName(t), Module: t.Module}
	if reason, run := h.gate(t); !run {
		tr.Result = domain.Result{Skipped: true, Msg: reason}
		h.record(t, act, tr.Result)
		return tr
	}
	if ctx.Err() != nil {
		tr.Result = failed("cancelled")
		h.failedSoFar = true
		return tr
	}
	switch {
	case t.Block != nil:
		tr.Result = h.runBlock(ctx, t, act)
	case t.Module != "":
		r := Attempt(ctx, t, act, h.Options)
		tr.Result = Finalize(ctx, t, act, r, h.Env)
	default:
		tr.Result = failed(fmt.Sprintf("task %q has nothing to run here (apply: is scenario-only)", tr.Name))
	}
	h.record(t, act, tr.Result)
	return tr
}

// gate applies the requisites: onfail tasks run only after their watched
// task failed (and then even though the host already failed); any other
// task runs only while nothing failed, onchanges only after a change,
// require only after success.
func (h *HostRun) gate(t *dsl.Task) (string, bool) {
	if len(t.Onfail) > 0 {
		for _, n := range t.Onfail {
			if r, ok := h.results[n]; ok && r.Failed {
				return "", true
			}
		}
		return "skipped: onfail: none of " + strings.Join(t.Onfail, ", ") + " failed", false
	}
	if h.failedSoFar {
		return "skipped: an earlier task failed on this host", false
	}
	for _, n := range t.Require {
		if r, ok := h.results[n]; !ok || r.Failed || r.Unreachable {
			return "skipped: require: " + n + " did not succeed", false
		}
	}
	if len(t.Onchanges) > 0 {
		for _, n := range t.Onchanges {
			if r, ok := h.results[n]; ok && r.Changed {
				return "", true
			}
		}
		return "skipped: onchanges: no change in " + strings.Join(t.Onchanges, ", "), false
	}
	return "", true
}

func (h *HostRun) runBlock(ctx context.Context, t *dsl.Task, act *expr.Activation) domain.Result {
	bact, err := TaskActivation(ctx, t, act, h.Env)
	if err != nil {
		return failed(err.Error())
	}
	if t.When != "" {
		ok, err := evalBool(ctx, h.Env, t.When, bact)
		if err != nil {
			return failed("when: " + err.Error())
		}
		if !ok {
			DeclareNested(act.Registers, t)
			return domain.Result{Skipped: true, Msg: "skipped: when is false"}
		}
	}
	var agg domain.Result
	for _, c := range t.Block {
		tr := h.runTask(ctx, c, bact)
		agg.Tasks = append(agg.Tasks, tr)
		agg.Changed = agg.Changed || tr.Changed
		agg.Unknown = agg.Unknown || tr.Unknown
		if tr.Failed {
			agg.Failed = true
			if agg.Msg == "" {
				agg.Msg = fmt.Sprintf("%s: %s", tr.Name, tr.Msg)
			}
		}
		agg.DurationMS += tr.DurationMS
	}
	if agg.Failed {
		agg.Unknown = false
	}
	return agg
}

func (h *HostRun) record(t *dsl.Task, act *expr.Activation, r domain.Result) {
	if r.Failed && len(t.Onfail) == 0 {
		h.failedSoFar = true
	}
	if r.Failed && len(t.Onfail) > 0 {
		// An onfail handler that itself fails still leaves the host failed.
		h.failedSoFar = true
	}
	if t.Register != "" {
		h.results[t.Register] = r
		act.Registers.Set(t.Register, h.SID, r)
	}
}

// DeclareNested declares the registers of the tasks inside block t as
// empty values (SPEC §7: a register of a task that ran on no host has
// size 0), so that a block skipped or filtered out on every host leaves
// size(register.x) == 0 for the tasks it holds, not an undefined name.
// Registers already known are left alone.
func DeclareNested(regs *expr.Registers, t *dsl.Task) {
	if regs == nil {
		return
	}
	for _, c := range t.Block {
		if c.Register != "" {
			regs.DeclareUnreached(c.Register, fmt.Sprintf("task %q did not run: it is inside block %q, which was skipped or targeted no host", TaskName(c), TaskName(t)))
		}
		DeclareNested(regs, c)
	}
}

// TaskName is the name shown for t: its name:, else its module or destiny.
func TaskName(t *dsl.Task) string {
	switch {
	case t.Name != "":
		return t.Name
	case t.Module != "":
		return t.Module
	case t.Apply != nil:
		return "apply " + t.Apply.Destiny
	case t.Include != "":
		return "include " + t.Include
	default:
		return "block"
	}
}
