package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/store"
)

// commit is the commit barrier (SPEC §8.4), reached only when every task
// finished on every host without failure or unreachable host: it evaluates
// state_changes outside any per-host context (register.x resolves only
// when exactly one host has a result), validates the new state against
// state_schema and commits state, history snapshot, run status and
// incarnation status in one transaction. Any error means nothing was
// committed.
func (r *runner) commit(ctx context.Context) error {
	state, err := r.newState(ctx)
	if err != nil {
		return err
	}
	snap := store.Snapshot{Summary: r.summary()}
	if err := r.e.cfg.Store.CommitRun(ctx, r.run.ID, state, snap, r.e.now()); err != nil {
		return fmt.Errorf("committing the state failed, nothing was committed: %w", err)
	}
	return nil
}

// newState applies state_changes to the committed state and validates the
// result.
func (r *runner) newState(ctx context.Context) (map[string]any, error) {
	state := maps.Clone(r.inc.State)
	if state == nil {
		state = map[string]any{}
	}
	act := r.base
	act.Vars = r.scenarioVars(ctx, &act)
	sets, err := r.env.RenderMap(ctx, r.sc.StateChanges.Sets, &act)
	if err != nil {
		return nil, fmt.Errorf("state_changes (%s): %w; nothing was committed", r.sc.StateChanges.Pos, err)
	}
	// Secrets are never stored (SPEC §10.2): a value rendered from one is
	// committed masked.
	if secrets := r.secretList(); len(secrets) > 0 && sets != nil {
		sets = executor.MaskValue(sets, secrets).(map[string]any)
	}
	maps.Copy(state, sets)
	for _, k := range r.sc.StateChanges.Unsets {
		delete(state, k)
	}
	if err := r.svc.ValidateState(state); err != nil {
		var de *domain.Error
		if errors.As(err, &de) && de.Err != nil {
			return nil, fmt.Errorf("state_changes violate service.yml state_schema (%s); nothing was committed", de.Err)
		}
		return nil, fmt.Errorf("state_changes violate service.yml state_schema: %w; nothing was committed", err)
	}
	return state, nil
}

// settleTriggers keeps the pending onchanges triggers of SPEC §8.3 (normal
// runs only). A trigger the handler served successfully on its host is
// cleared. When the run did not succeed, every handler owed to a host — a
// task it watches changed there, or a trigger was pending — that did not
// succeed there is recorded, so the next run of the scenario fires it even
// if nothing changes then.
func (r *runner) settleTriggers(ctx context.Context, runFailed bool) {
	var add []store.PendingTrigger
	for t, key := range r.keys {
		for _, sid := range r.members {
			res, ran := r.result(t, sid)
			served := ran && !res.Failed && !res.Skipped && !res.Unreachable
			pending := r.pending[key][sid]
			switch {
			case served && pending:
				if err := r.e.cfg.Store.ClearTrigger(ctx, r.inc.Name, r.sc.Name, key, sid); err != nil {
					r.e.log.ErrorContext(ctx, "clearing a pending trigger failed", "apply_id", r.run.ID, "task", key, "sid", sid, "err", err)
				}
			case !served && runFailed && (pending || r.watchedChanged(t, sid)):
				add = append(add, store.PendingTrigger{
					Incarnation: r.inc.Name, Scenario: r.sc.Name, Task: key, SID: sid, RunID: r.run.ID, CreatedAt: r.e.now(),
				})
			}
		}
	}
	if len(add) == 0 {
		return
	}
	if err := r.e.cfg.Store.AddTriggers(ctx, add); err != nil {
		r.e.log.ErrorContext(ctx, "recording pending triggers failed", "apply_id", r.run.ID, "err", err)
	}
}

// watchedChanged reports whether a task handler t watches changed on sid
// in this run.
func (r *runner) watchedChanged(t *dsl.Task, sid string) bool {
	for _, n := range t.Onchanges {
		if m, ok := r.base.Registers.Get(n, sid); ok && m["changed"] == true {
			return true
		}
	}
	return false
}
