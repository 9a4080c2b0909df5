package dsl

import (
	"context"
	"fmt"

	"github.com/soulstack/soulstack/internal/expr"
)

// Env returns the expression environment tasks of a scenario use.
func (s *Scenario) Env() *expr.Env { return expr.ForKind(expr.KindScenario) }

// Env returns the expression environment tasks of a destiny use.
func (d *Destiny) Env() *expr.Env { return expr.ForKind(expr.KindDestiny) }

// LoopItems evaluates the task's loop: for one host: the rendered list, or
// nil when the task has no loop. A loop expression that does not yield a
// list is an error naming the task.
func (t *Task) LoopItems(ctx context.Context, env *expr.Env, act *expr.Activation) ([]any, error) {
	if t.Loop == nil {
		return nil, nil
	}
	v, err := env.Render(ctx, t.Loop, act)
	if err != nil {
		return nil, fmt.Errorf("%s: loop: %w", t.Pos, err)
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: loop: yielded %s, not a list", t.Pos, describe(v))
	}
	return items, nil
}
