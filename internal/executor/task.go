// Package executor holds the per-host semantics of a task (SPEC §5): task
// vars, when, loop, params rendering, check-mode rules, retry/until,
// timeout, changed_when/failed_when, requisites and register. The soul runs
// whole destiny bundles with RunTasks; the run engine runs scenario tasks
// host by host with Attempt and Finalize, dispatching each module call to
// the host's soul through its Caller.
package executor

import (
	"context"
	"fmt"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// Caller runs one rendered module call on the host and returns its result.
// timeout is the task's timeout (0 = none given: the caller's default).
type Caller func(ctx context.Context, call dispatch.Call, check bool, timeout time.Duration) domain.Result

// Options is what Attempt needs besides the task and its activation.
type Options struct {
	Env   *expr.Env
	Check bool
	Call  Caller
	// Files are the scenario's or destiny's files (templates), shipped with
	// calls that need them.
	Files map[string][]byte
	// DefaultTimeout applies to tasks without timeout: (0 = none).
	DefaultTimeout time.Duration
	// Sleep waits between retry attempts; nil sleeps for real.
	Sleep func(context.Context, time.Duration) error
	// Taint, when the run has secrets, marks the params derived from
	// them (see Taint); nil marks nothing.
	Taint *Taint
	// Modules are the service's custom modules (service.<name>), shipped
	// with the calls that run them.
	Modules map[string]*custom.Module
	// MaxLoopItems bounds the items of a loop: (dsl.DefaultMaxLoopItems
	// when 0): a longer list fails the task before any item runs.
	MaxLoopItems int
}

// commandModules do not run in check mode, except as the read-only probe.
var commandModules = map[string]bool{"core.exec.run": true, "core.cmd.shell": true}

// TaskActivation returns act with the task's vars: rendered and merged over
// act.Vars (task vars win). Task vars may refer to item when looping, so
// Attempt calls it per item.
func TaskActivation(ctx context.Context, t *dsl.Task, act *expr.Activation, env *expr.Env) (*expr.Activation, error) {
	if len(t.Vars) == 0 && len(t.VarsFiles) == 0 {
		return act, nil
	}
	c := *act
	merged := maps.Clone(act.Vars)
	if merged == nil {
		merged = map[string]any{}
	}
	if len(t.VarsFiles) > 0 {
		// vars_files first: the task's vars: may read and override them.
		fv, err := VarsFromFiles(ctx, env, t.VarsFiles, act)
		if err != nil {
			return nil, err
		}
		maps.Copy(merged, fv)
		c.Vars = merged
	}
	if len(t.Vars) > 0 {
		vars, err := env.RenderMap(ctx, t.Vars, &c)
		if err != nil {
			return nil, fmt.Errorf("vars: %w", err)
		}
		merged = maps.Clone(merged)
		maps.Copy(merged, vars)
	}
	c.Vars = merged
	return &c, nil
}

// Attempt runs one module task on one host: when (per loop item), loop,
// params render, check-mode rules, retry/until and the timeout. It does not
// apply failed_when/changed_when: see Finalize.
func Attempt(ctx context.Context, t *dsl.Task, act *expr.Activation, o Options) domain.Result {
	start := time.Now()
	if t.Loop == nil {
		r := attemptOne(ctx, t, act, o)
		if r.DurationMS == 0 {
			r.DurationMS = time.Since(start).Milliseconds()
		}
		return r
	}
	items, err := loopItems(ctx, t, act, o.Env)
	if err != nil {
		return failed("loop: " + err.Error())
	}
	limit := o.MaxLoopItems
	if limit <= 0 {
		limit = dsl.DefaultMaxLoopItems
	}
	if len(items) > limit {
		return failed(fmt.Sprintf("loop: %d items, more than the limit of %d per task (runs.max_loop_items in keeper.yaml): split the work or raise the limit", len(items), limit))
	}
	agg := domain.Result{Results: make([]domain.Result, 0, len(items)), Skipped: true}
	for i, it := range items {
		c := *act
		c.Item, c.LoopIndex, c.HasItem = it, i, true
		oi := o
		oi.Taint = o.Taint.withItem(ctx, t, o.Env, i, it)
		r := attemptOne(ctx, t, &c, oi)
		agg.Results = append(agg.Results, r)
		agg.Changed = agg.Changed || r.Changed
		agg.Unknown = agg.Unknown || r.Unknown
		agg.Failed = agg.Failed || r.Failed
		agg.Skipped = agg.Skipped && r.Skipped
		if r.Failed && agg.Msg == "" {
			agg.Msg = fmt.Sprintf("item %d: %s", i, r.Msg)
		}
		if r.RC != 0 && agg.RC == 0 {
			agg.RC = r.RC
		}
	}
	if len(items) == 0 {
		agg.Msg = "loop over an empty list"
	}
	agg.DurationMS = time.Since(start).Milliseconds()
	return agg
}

func loopItems(ctx context.Context, t *dsl.Task, act *expr.Activation, env *expr.Env) ([]any, error) {
	v, err := env.Render(ctx, t.Loop, act)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []any:
		return x, nil
	case map[string]any:
		// A map loops over its entries in the order its YAML wrote them
		// (issue 37, as Ansible's dict2items), else in key order (SPEC
		// §9), each item {key, value}, the same on every host and run.
		keys := act.Order.Keys(x)
		items := make([]any, len(keys))
		for i, k := range keys {
			items[i] = map[string]any{"key": k, "value": x[k]}
		}
		return items, nil
	}
	return nil, fmt.Errorf("must yield a list or a map, got %T", v)
}

func attemptOne(ctx context.Context, t *dsl.Task, act *expr.Activation, o Options) domain.Result {
	act, err := TaskActivation(ctx, t, act, o.Env)
	if err != nil {
		return failed(err.Error())
	}
	if t.When != "" {
		ok, err := evalBool(ctx, o.Env, t.When, act)
		if err != nil {
			return failed("when: " + err.Error())
		}
		if !ok {
			return domain.Result{Skipped: true, Msg: "skipped: when is false"}
		}
	}
	params, err := o.Env.RenderMap(ctx, t.Params, act)
	if err != nil {
		return failed("params: " + err.Error())
	}
	tainted := o.Taint.params(ctx, t, o.Env, params)
	// A template renders on the soul: what its functions make of a secret
	// in its data is unknown here, so its diff is withheld too.
	templated := dsl.TemplateModule(t.Module) && params["template"] != nil
	rendered := templated && o.Taint.templateData(ctx, t, o.Env, act)
	if tainted || rendered {
		// Content derived from a secret: no hash or size of it (L9).
		inner := o.Call
		o.Call = func(ctx context.Context, c dispatch.Call, check bool, timeout time.Duration) domain.Result {
			r := StripDigests(inner(ctx, c, check, timeout))
			if rendered {
				r = HideDiff(r)
			}
			return r
		}
	}
	check := o.Check
	if check && commandModules[t.Module] {
		if !t.IsProbe() {
			return domain.Result{Unknown: true, Msg: "would run; result unknown in check mode (declare it read-only with changed_when: false to run it as a probe)"}
		}
		check = false
	}
	call := dispatch.Call{Module: t.Module, Params: params}
	if m, ok := o.Modules[t.Module]; ok {
		if check && !m.Spec.CheckMode {
			return domain.Result{Unknown: true, Msg: fmt.Sprintf("would run; result unknown in check mode (%s does not declare check_mode: true)", t.Module)}
		}
		call.Custom = Wire(m)
	}
	if templated {
		call.Files = o.Files
		call.TemplateData = TemplateData(act)
		// The YAML orders of the data's maps (facts have none).
		call.KeyOrder = act.Order.For(act.Vars, act.Input, act.Essence, act.Item)
	}
	if t.Module == "core.file.copied" || t.Module == "core.archive.extracted" {
		call.Files = CopiedFiles(o.Files, params)
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = o.DefaultTimeout
	}
	attempts, delay := 1, time.Duration(0)
	if t.Retry != nil {
		attempts, delay = max(t.Retry.Count, 1), t.Retry.Delay
	}
	var r domain.Result
	for i := 1; i <= attempts; i++ {
		r = o.Call(ctx, call, check, timeout)
		done, err := retryDone(ctx, t, act, r, o.Env)
		if err != nil {
			r.Failed = true
			r.Msg = joinMsg(r.Msg, "retry.until: "+err.Error())
			return r
		}
		if done || i == attempts || r.Unreachable {
			if i > 1 {
				if r.Data == nil {
					r.Data = map[string]any{}
				}
				r.Data["attempts"] = int64(i)
			}
			if !done && t.Retry != nil && t.Retry.Until != "" && !r.Unreachable {
				// SPEC §5 decision: a health gate never passes silently.
				// failed_when, when given, decides alone (Finalize).
				r.Msg = joinMsg(r.Msg, fmt.Sprintf("until never held after %d attempts: %s", attempts, t.Retry.Until))
				r.Failed = true
			}
			return r
		}
		if err := sleep(ctx, o.Sleep, delay); err != nil {
			r.Failed = true
			r.Msg = joinMsg(r.Msg, "cancelled while waiting to retry")
			return r
		}
	}
	return r
}

// retryDone reports whether the attempt that produced r ends the retries:
// until is true, or (no until) the module did not fail.
func retryDone(ctx context.Context, t *dsl.Task, act *expr.Activation, r domain.Result, env *expr.Env) (bool, error) {
	if t.Retry == nil {
		return true, nil
	}
	if t.Retry.Until == "" {
		return !r.Failed, nil
	}
	return evalBool(ctx, env, t.Retry.Until, act.With(r.Map()))
}

// Finalize applies changed_when, then failed_when, to r with register.self
// = r. act must carry the registers as they stand once every host of the
// step answered (failed_when may read the task's own register across
// hosts). Skipped and unreachable results are returned unchanged.
func Finalize(ctx context.Context, t *dsl.Task, act *expr.Activation, r domain.Result, env *expr.Env) domain.Result {
	if r.Unreachable || r.Unknown || (r.Skipped && !r.Failed) {
		return r
	}
	vt := t
	if t.Loop != nil {
		// After the loop there is no item: vars that read it were
		// rendered per item and are not visible here (validation rejects
		// item in failed_when and changed_when).
		c := *t
		c.Vars = varsWithoutItem(t.Vars, env)
		vt = &c
	}
	act, err := TaskActivation(ctx, vt, act, env)
	if err != nil {
		r.Failed = true
		r.Msg = joinMsg(r.Msg, err.Error())
		return r
	}
	if t.ChangedWhen != "" {
		v, err := evalBool(ctx, env, t.ChangedWhen, act.With(r.Map()))
		if err != nil {
			r.Failed = true
			r.Msg = joinMsg(r.Msg, "changed_when: "+err.Error())
			return r
		}
		r.Changed = v
	}
	if t.FailedWhen != "" {
		v, err := evalBool(ctx, env, t.FailedWhen, act.With(r.Map()))
		if err != nil {
			r.Failed = true
			r.Msg = joinMsg(r.Msg, "failed_when: "+err.Error())
			return r
		}
		if v && !r.Failed {
			r.Msg = joinMsg(r.Msg, "failed_when is true: "+t.FailedWhen)
		}
		r.Failed = v
	}
	return r
}

// TemplateData is the data core.file.rendered renders with: the task's vars
// at top level and under .vars, plus .input, .essence and .soulprint.
func TemplateData(act *expr.Activation) map[string]any {
	d := make(map[string]any, len(act.Vars)+4)
	maps.Copy(d, act.Vars)
	d["vars"] = orEmpty(act.Vars)
	d["input"] = orEmpty(act.Input)
	d["essence"] = orEmpty(act.Essence)
	d["soulprint"] = map[string]any{"self": orEmpty(act.Soulprint.Self)}
	if act.HasItem {
		d["item"] = act.Item
		d["loop_index"] = act.LoopIndex
	}
	return d
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func evalBool(ctx context.Context, env *expr.Env, src string, act *expr.Activation) (bool, error) {
	p, err := env.CompileBool(src)
	if err != nil {
		return false, err
	}
	return p.EvalBool(ctx, act)
}

func sleep(ctx context.Context, fn func(context.Context, time.Duration) error, d time.Duration) error {
	if fn != nil {
		return fn(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func failed(msg string) domain.Result { return domain.Result{Failed: true, Msg: msg} }

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// varsWithoutItem drops the vars whose value reads item or loop_index.
func varsWithoutItem(vars map[string]any, env *expr.Env) map[string]any {
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		if !readsItem(v, env) {
			out[k] = v
		}
	}
	return out
}

func readsItem(v any, env *expr.Env) bool {
	switch x := v.(type) {
	case string:
		if !expr.HasInterpolation(x) {
			return false
		}
		t, err := env.ParseTemplate(x)
		if err != nil {
			return false
		}
		for _, r := range t.Refs().Roots {
			if r == "item" || r == "loop_index" {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if readsItem(e, env) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if readsItem(e, env) {
				return true
			}
		}
	}
	return false
}

// CopiedFiles is what a core.file.copied (or core.archive.extracted) call
// ships: only its src, from the files/ directory of the scenario or
// destiny, or every file under src when it is a directory (nothing when
// src is missing or not a string, or names a path on the host with
// remote_src: the module then says so).
func CopiedFiles(files map[string][]byte, params map[string]any) map[string][]byte {
	src, _ := params["src"].(string)
	if remote, _ := params["remote_src"].(bool); remote || src == "" {
		return nil
	}
	name := path.Join("files", path.Clean("/"+src))
	if data, ok := files[name]; ok {
		return map[string][]byte{name: data}
	}
	var out map[string][]byte
	for n, data := range files {
		if strings.HasPrefix(n, name+"/") {
			if out == nil {
				out = map[string][]byte{}
			}
			out[n] = data
		}
	}
	return out
}

// Wire is m as it travels with a call or a bundle.
func Wire(m *custom.Module) *dispatch.CustomModule {
	return &dispatch.CustomModule{Spec: m.SpecData, Program: m.Program, SHA256: m.SHA256}
}

// WireAll is Wire over a set of modules (nil for none).
func WireAll(mods map[string]*custom.Module) map[string]*dispatch.CustomModule {
	if len(mods) == 0 {
		return nil
	}
	out := make(map[string]*dispatch.CustomModule, len(mods))
	for name, m := range mods {
		out[name] = Wire(m)
	}
	return out
}

// Unwire rebuilds the custom modules a bundle carries, checking each
// program against its pin.
func Unwire(wire map[string]*dispatch.CustomModule) (map[string]*custom.Module, error) {
	if len(wire) == 0 {
		return nil, nil
	}
	out := make(map[string]*custom.Module, len(wire))
	for name, w := range wire {
		if w == nil {
			return nil, fmt.Errorf("custom module %s arrived without its program", name)
		}
		m, err := custom.FromWire(name, w.Spec, w.Program, w.SHA256)
		if err != nil {
			return nil, err
		}
		out[name] = m
	}
	return out, nil
}
