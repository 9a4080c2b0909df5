package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
)

// apply runs an apply: task on one host: task vars, when, then the
// destiny's input rendered for the host and checked against the destiny's
// input: declaration, and the whole destiny shipped as one bundle — one
// round trip per host (per loop item when looping). The soul returns the
// per-task results and the destiny's output, which register exposes as
// register.<name>.output.
func (r *runner) apply(ctx context.Context, t *dsl.Task, sid string, wave int, act *expr.Activation) domain.Result {
	start := time.Now()
	d := r.svc.Destinies[t.Apply.Destiny]
	if d == nil {
		return domain.Result{Failed: true, Msg: fmt.Sprintf("destiny %s does not exist in this service", t.Apply.Destiny)}
	}
	if t.Loop == nil {
		res := r.applyOne(ctx, t, d, sid, wave, act, 1)
		if res.DurationMS == 0 {
			res.DurationMS = time.Since(start).Milliseconds()
		}
		return res
	}
	v, err := r.env.Render(ctx, t.Loop, act)
	if err != nil {
		return domain.Result{Failed: true, Msg: "loop: " + err.Error()}
	}
	items, ok := v.([]any)
	if !ok {
		return domain.Result{Failed: true, Msg: fmt.Sprintf("loop: must yield a list, got %T", v)}
	}
	agg := domain.Result{Skipped: true, Results: make([]domain.Result, 0, len(items))}
	for i, it := range items {
		c := *act
		c.Item, c.LoopIndex, c.HasItem = it, i, true
		res := r.applyOne(ctx, t, d, sid, wave, &c, int64(i+1))
		agg.Results = append(agg.Results, res)
		agg.Changed = agg.Changed || res.Changed
		agg.Unknown = agg.Unknown || res.Unknown
		agg.Failed = agg.Failed || res.Failed
		agg.Skipped = agg.Skipped && res.Skipped
		agg.Unreachable = agg.Unreachable || res.Unreachable
		if res.Failed && agg.Msg == "" {
			agg.Msg = fmt.Sprintf("item %d: %s", i, res.Msg)
		}
	}
	if len(items) == 0 {
		agg.Msg = "loop over an empty list"
	}
	agg.DurationMS = time.Since(start).Milliseconds()
	return agg
}

func (r *runner) applyOne(ctx context.Context, t *dsl.Task, d *dsl.Destiny, sid string, wave int, act *expr.Activation, n int64) domain.Result {
	a, err := executor.TaskActivation(ctx, t, act, r.env)
	if err != nil {
		return domain.Result{Failed: true, Msg: err.Error()}
	}
	if t.When != "" {
		ok, err := evalBool(ctx, r.env, t.When, a)
		switch {
		case err != nil:
			return domain.Result{Failed: true, Msg: "when: " + err.Error()}
		case !ok:
			return domain.Result{Skipped: true, Msg: "skipped: when is false"}
		}
	}
	given, err := r.env.RenderMap(ctx, t.Apply.Input, a)
	if err != nil {
		return domain.Result{Failed: true, Msg: "apply.input: " + err.Error()}
	}
	if c := r.canaryOf(ctx, act); c != nil {
		if ca, err := executor.TaskActivation(ctx, t, c, r.env); err == nil {
			executor.MarkDerived(ctx, r.env, t.Apply.Input, given, ca, r.addSecrets)
		}
	}
	input, err := d.Input.Resolve(given)
	if err != nil {
		return domain.Result{Failed: true, Msg: fmt.Sprintf("apply.input of destiny %s: %v", d.Name, err)}
	}
	for _, name := range d.Input.Secrets() {
		r.addSecrets(secretString(input[name]))
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = r.e.cfg.DefaultTimeout
	}
	w := dispatch.Work{
		Check:   r.run.Check,
		Timeout: timeout,
		Bundle: &dispatch.Bundle{Destiny: d.Name, Files: d.Files, Input: input, Essence: a.Essence,
			KeyOrder: a.Order.For(input, a.Essence),
			Modules:  executor.WireAll(dsl.UsedModules(d.Tasks, r.svc.Modules))},
	}
	return r.dispatch(ctx, t, sid, wave, w, n)
}
