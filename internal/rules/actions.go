package rules

import (
	"context"
	"errors"
	"fmt"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
)

// start runs a fired decision's action in a goroutine the engine owns and
// records what it started. The concurrency slot is held until the run (or
// the procedure's tasks) ended; a notification frees it at once.
func (e *Engine) start(ctx context.Context, a pendingAction, firingID int64) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		ctx := context.WithoutCancel(ctx)
		vars := map[string]any{"event": a.event}
		do := a.cand.rule.Do
		var runID string
		var taskIDs []string
		var err error
		switch do.Kind {
		case dsl.ActionRun:
			var inc string
			var input map[string]any
			if inc, input, err = e.runArgs(ctx, a.cand, vars); err == nil {
				runID, err = e.cfg.Actions.StartRun(ctx, inc, do.Scenario, input, do.Check, a.cand.owner)
			}
			if err == nil {
				e.runMu.Lock()
				e.runRule[runID] = runFiring{rule: a.cand.id, state: a.state}
				e.runMu.Unlock()
			}
		case dsl.ActionProcedure:
			var vs map[string]any
			if vs, err = render(ctx, a.cand.rule.On, do.Vars, vars); err == nil {
				taskIDs, err = e.cfg.Actions.ExecuteProcedure(ctx, do.Procedure, vs, a.cand.owner)
			}
		case dsl.ActionNotify:
			var n Notification
			if n, err = e.notification(ctx, a.cand, vars); err == nil {
				err = e.cfg.Actions.Notify(ctx, do.Endpoints, n, firingID)
			}
		default:
			err = fmt.Errorf("unknown action %q", do.Kind)
		}
		if err != nil {
			e.count(func(s *Stats) { s.Failed++ })
			e.log.Warn("a rule fired and its action could not start", "rule", a.cand.id, "action", do.Kind, "err", err)
		}
		if firingID > 0 {
			if rerr := e.cfg.Store.SetFiringOutcome(ctx, firingID, runID, taskIDs, errText(err)); rerr != nil {
				e.log.Error("recording a firing's outcome", "rule", a.cand.id, "err", rerr)
			}
		}
		switch {
		case err != nil, do.Kind == dsl.ActionNotify:
			a.state.release()
		case do.Kind == dsl.ActionProcedure:
			e.cfg.Actions.WaitTasks(ctx, taskIDs)
			a.state.release()
		}
		// A run's slot is released by RunEnded.
	}()
}

// runArgs renders a run action's incarnation and input from the event.
func (e *Engine) runArgs(ctx context.Context, c candidate, vars map[string]any) (string, map[string]any, error) {
	do := c.rule.Do
	inc := c.incarnation
	if inc == "" {
		env, err := dsl.RuleEnv(c.rule.On)
		if err != nil {
			return "", nil, err
		}
		t, err := env.ParseTemplate(do.Incarnation)
		if err != nil {
			return "", nil, err
		}
		v, err := t.Render(ctx, vars)
		if err != nil {
			return "", nil, fmt.Errorf("incarnation: %w", err)
		}
		inc = expr.Stringify(v)
	}
	if inc == "" {
		return "", nil, errors.New("the event names no incarnation to run on")
	}
	input, err := render(ctx, c.rule.On, do.Input, vars)
	return inc, input, err
}

func (e *Engine) notification(ctx context.Context, c candidate, vars map[string]any) (Notification, error) {
	do := c.rule.Do
	str := func(s string) (string, error) {
		if s == "" {
			return "", nil
		}
		v, err := renderValue(ctx, c.rule.On, s, vars)
		return expr.Stringify(v), err
	}
	subject, err := str(do.Subject)
	if err != nil {
		return Notification{}, fmt.Errorf("subject: %w", err)
	}
	if subject == "" {
		subject = fmt.Sprintf("Soul Stack rule %s: %v", c.id, vars["event"].(map[string]any)["kind"])
	}
	msg, err := str(do.Message)
	if err != nil {
		return Notification{}, fmt.Errorf("message: %w", err)
	}
	return Notification{Rule: c.id, Subject: subject, Message: msg, Event: vars["event"].(map[string]any), At: e.cfg.Now().UTC()}, nil
}

// render renders every ${ } string inside a values map.
func render(ctx context.Context, kind string, m map[string]any, vars map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		r, err := renderAny(ctx, kind, v, vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = r
	}
	return out, nil
}

func renderAny(ctx context.Context, kind string, v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if !expr.HasInterpolation(x) {
			return x, nil
		}
		return renderValue(ctx, kind, x, vars)
	case map[string]any:
		return render(ctx, kind, x, vars)
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			r, err := renderAny(ctx, kind, it, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func renderValue(ctx context.Context, kind, s string, vars map[string]any) (any, error) {
	env, err := dsl.RuleEnv(kind)
	if err != nil {
		return nil, err
	}
	t, err := env.ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	return t.Render(ctx, vars)
}
