package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
)

// RunBundle runs a destiny bundle on this host: it parses the destiny from
// the shipped files, resolves the input, runs the tasks with their
// requisites and renders the declared output. The result aggregates the
// tasks (changed if any changed, failed if any failed) and carries each
// task's result in Tasks and the output in Output.
func RunBundle(ctx context.Context, b *dispatch.Bundle, facts map[string]any, o Options) domain.Result {
	start := time.Now()
	mods, err := Unwire(b.Modules)
	if err != nil {
		return failed(fmt.Sprintf("destiny %s: %v", b.Destiny, err))
	}
	d, err := dsl.ParseDestiny(b.Destiny, b.Files, mods)
	if err != nil {
		return failed(fmt.Sprintf("destiny %s: %v", b.Destiny, err))
	}
	input, err := d.Input.Resolve(b.Input)
	if err != nil {
		return failed(fmt.Sprintf("destiny %s input: %v", b.Destiny, err))
	}
	if o.Env == nil {
		o.Env = expr.ForKind(expr.KindDestiny)
	}
	o.Files = d.Files
	o.Modules = mods
	sid, _ := facts["sid"].(string)
	order := &expr.KeyOrder{}
	order.Merge(b.KeyOrder)
	order.Merge(d.KeyOrder)
	act := &expr.Activation{
		Order:      order,
		Input:      input,
		Essence:    b.Essence,
		Registers:  expr.NewRegisters(),
		CurrentSID: sid,
		Soulprint:  expr.Soulprint{Self: facts},
		Run:        map[string]any{"check_mode": o.Check},
	}
	if len(d.VarsFiles) > 0 {
		if act.Vars, err = VarsFromFiles(ctx, o.Env, d.VarsFiles, act); err != nil {
			return failed(fmt.Sprintf("destiny %s: %v", b.Destiny, err))
		}
	}
	h := &HostRun{Options: o, SID: sid}
	tasks, anyFailed := h.RunTasks(ctx, d.Tasks, act)
	res := domain.Result{Tasks: tasks, Failed: anyFailed}
	for _, t := range tasks {
		res.Changed = res.Changed || t.Changed
		// A command that would run in check mode leaves the destiny's
		// outcome unknown, as it would at top level (SPEC §9).
		res.Unknown = res.Unknown || t.Unknown
		if t.Failed && res.Msg == "" {
			res.Msg = fmt.Sprintf("task %q: %s", t.Name, t.Msg)
		}
	}
	if !anyFailed && len(d.Output) > 0 {
		out, err := o.Env.RenderMap(ctx, d.Output, act)
		if err != nil {
			res.Failed = true
			res.Msg = "output: " + err.Error()
		} else {
			res.Output = out
		}
	}
	if res.Failed {
		res.Unknown = false
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res
}
