package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// block runs a block on the hosts of one wave: its requisites, vars and
// when per host, then its tasks in order on the hosts that passed (each
// child resolving its own target within them), then one aggregate row per
// host (changed if a child changed, failed if one failed), which is also
// what register: on the block holds.
func (r *runner) block(ctx context.Context, t *dsl.Task, hosts []string, wave int, sc scope, count int) {
	// After a failure a block is entered only to reach the onfail handlers
	// inside it, unless it is a handler itself.
	descendOnly := r.failed() && !sc.handler && len(t.Onfail) == 0
	child := scope{acts: map[string]*expr.Activation{}, wave: wave, handler: sc.handler || (r.failed() && len(t.Onfail) > 0)}
	var rows []store.HostResult
	var failedOn []string
	start := r.e.now()
	for _, sid := range hosts {
		a := r.activation(ctx, sc, sid, count)
		in, ok := r.enterBlock(ctx, t, sid, a, descendOnly)
		if !ok {
			res := in.Result
			r.setResult(t, sid, res)
			if t.Register != "" {
				r.base.Registers.Set(t.Register, sid, res)
			}
			rows = append(rows, r.row(t, sid, wave, res, start, r.e.now()))
			if res.Failed {
				failedOn = append(failedOn, sid)
			}
			continue
		}
		child.acts[sid] = in.act
		child.hosts = append(child.hosts, sid)
	}
	r.record(rows)
	if len(failedOn) > 0 {
		r.fail(fmt.Sprintf("block %q failed on %s", executor.TaskName(t), strings.Join(failedOn, ", ")))
		return
	}
	if len(child.hosts) == 0 {
		return
	}
	r.walk(ctx, t.Block, child)
	r.aggregate(ctx, t, child.hosts, wave, start)
}

// entered is the outcome of entering a block on one host: either the
// activation its tasks run with, or the block's own (skipped or failed)
// result.
type entered struct {
	domain.Result
	act *expr.Activation
}

func (r *runner) enterBlock(ctx context.Context, t *dsl.Task, sid string, a *expr.Activation, descendOnly bool) (entered, bool) {
	if !descendOnly {
		if reason, ok := r.gate(t, sid); !ok {
			return entered{Result: domain.Result{Skipped: true, Msg: reason}}, false
		}
	}
	ba, err := executor.TaskActivation(ctx, t, a, r.env)
	if err != nil {
		return entered{Result: domain.Result{Failed: true, Msg: err.Error()}}, false
	}
	r.markBlockVars(ctx, t, a, ba)
	if t.When != "" && !descendOnly {
		ok, err := evalBool(ctx, r.env, t.When, ba)
		switch {
		case err != nil:
			return entered{Result: domain.Result{Failed: true, Msg: "when: " + err.Error()}}, false
		case !ok:
			return entered{Result: domain.Result{Skipped: true, Msg: "skipped: when is false"}}, false
		}
	}
	return entered{act: ba}, true
}

// aggregate records the block's row on each host from its children's
// results there; a host where no child produced anything gets none.
func (r *runner) aggregate(ctx context.Context, t *dsl.Task, hosts []string, wave int, start time.Time) {
	var rows []store.HostResult
	for _, sid := range hosts {
		agg := domain.Result{Skipped: true}
		any := false
		for _, c := range t.Block {
			res, ok := r.result(c, sid)
			if !ok {
				continue
			}
			any = true
			agg.Tasks = append(agg.Tasks, domain.TaskResult{Name: executor.TaskName(c), Module: c.Module, Result: res})
			agg.Changed = agg.Changed || res.Changed
			agg.Unknown = agg.Unknown || res.Unknown
			agg.Skipped = agg.Skipped && res.Skipped
			agg.Unreachable = agg.Unreachable || res.Unreachable
			agg.DurationMS += res.DurationMS
			if res.Failed {
				agg.Failed = true
				if agg.Msg == "" {
					agg.Msg = fmt.Sprintf("%s: %s", executor.TaskName(c), res.Msg)
				}
			}
		}
		if !any {
			continue
		}
		if agg.Failed || agg.Changed || agg.Unreachable || agg.Unknown {
			agg.Skipped = false
		}
		r.setResult(t, sid, agg)
		if t.Register != "" && !agg.Unreachable {
			r.base.Registers.Set(t.Register, sid, agg)
		}
		rows = append(rows, r.row(t, sid, wave, agg, start, r.e.now()))
	}
	r.record(rows)
}

func evalBool(ctx context.Context, env *expr.Env, src string, act *expr.Activation) (bool, error) {
	p, err := env.CompileBool(src)
	if err != nil {
		return false, err
	}
	return p.EvalBool(ctx, act)
}
