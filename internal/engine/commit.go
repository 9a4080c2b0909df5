package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/soulstack/soulstack/internal/domain"
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
	sealed, err := r.sealState(state)
	if err != nil {
		return fmt.Errorf("%w; nothing was committed", err)
	}
	snap := store.Snapshot{Summary: r.summary(), SealedState: sealed}
	if err := r.e.cfg.Store.CommitRun(ctx, r.run.ID, state, snap, r.e.now()); err != nil {
		return fmt.Errorf("committing the state failed, nothing was committed: %w", err)
	}
	return nil
}

// newState applies state_changes to the committed state (its secret keys
// opened) and validates the result. Values of keys state_schema declares
// secret: true may be derived from secrets; sealState seals them.
func (r *runner) newState(ctx context.Context) (map[string]any, error) {
	state := maps.Clone(r.base.State)
	if state == nil {
		state = map[string]any{}
	}
	secretKeys := r.svc.SecretStateKeys()
	act := r.base
	act.Vars = r.scenarioVars(ctx, &act)
	sc := r.sc.StateChanges
	var sets map[string]any
	if sc.Sets != nil {
		sets = make(map[string]any, len(sc.Sets))
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Sets)) {
		// One key at a time, so the error points at its line.
		v, err := r.env.RenderMap(ctx, map[string]any{k: sc.Sets[k]}, &act)
		if err != nil {
			pos, ok := sc.SetPos[k]
			if !ok {
				pos = sc.Pos
			}
			return nil, fmt.Errorf("state_changes (%s): %w; nothing was committed", pos, err)
		}
		sets[k] = v[k]
		if c := r.canaryOf(ctx, &act); c != nil {
			derived := executor.MarkDerived(ctx, r.env, map[string]any{k: sc.Sets[k]}, v, c, r.addSecrets)
			if derived && !slices.Contains(secretKeys, k) {
				pos, ok := sc.SetPos[k]
				if !ok {
					pos = sc.Pos
				}
				return nil, fmt.Errorf("state_changes (%s): %s is computed from a secret: it is never committed to incarnation.state, which every viewer reads; nothing was committed", pos, k)
			}
		}
	}
	// Secrets are never stored (SPEC §10.2): a value rendered from one is
	// committed masked.
	if secrets := r.secretList(); len(secrets) > 0 && sets != nil {
		for k, v := range sets {
			if !slices.Contains(secretKeys, k) {
				sets[k] = executor.MaskValue(v, secrets)
			}
		}
	}
	maps.Copy(state, sets)
	for _, k := range r.sc.StateChanges.Unsets {
		delete(state, k)
	}
	if err := r.svc.ValidateState(state); err != nil {
		// The schema's message may quote a value (a pattern mismatch does).
		secrets := r.secretList()
		var de *domain.Error
		if errors.As(err, &de) && de.Err != nil {
			return nil, fmt.Errorf("state_changes violate service.yml state_schema (%s); nothing was committed", executor.MaskString(de.Err.Error(), secrets))
		}
		return nil, fmt.Errorf("state_changes violate service.yml state_schema: %s; nothing was committed", executor.MaskString(err.Error(), secrets))
	}
	return state, nil
}

// settleTriggers keeps the pending onchanges triggers of SPEC §8.3 (normal
// runs only) from this run's results: see taskIndex.settle.
func (r *runner) settleTriggers(ctx context.Context, runFailed bool) {
	add, clear := r.idx.settle(r.members, r.pending, runFailed, r.result)
	for _, c := range clear {
		if err := r.e.cfg.Store.ClearTrigger(ctx, r.inc.Name, r.sc.Name, c.key, c.sid); err != nil {
			r.e.log.ErrorContext(ctx, "clearing a pending trigger failed", "apply_id", r.run.ID, "task", c.key, "sid", c.sid, "err", err)
		}
	}
	if len(add) == 0 {
		return
	}
	if err := r.e.cfg.Store.AddTriggers(ctx, pendingTriggers(r.run, add, r.e.now())); err != nil {
		r.e.log.ErrorContext(ctx, "recording pending triggers failed", "apply_id", r.run.ID, "err", err)
	}
}
