package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// StateFits reports why the incarnation's committed state does not fit
// the state_schema of the service at commit ("" when it fits).
func (e *Engine) StateFits(ctx context.Context, inc store.Incarnation, commit string) (string, error) {
	svc, err := e.cfg.Services.Open(ctx, inc.Service, commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", inc.Service, commit, err)
	}
	state := inc.State
	if len(inc.SealedState) > 0 {
		// The schema judges the values, not their ****.
		r := &runner{e: e, inc: inc}
		if state, err = r.openState(); err != nil {
			return "", err
		}
	}
	if err := svc.ValidateState(state); err != nil {
		var de *domain.Error
		if errors.As(err, &de) && de.Err != nil {
			return de.Err.Error(), nil
		}
		return err.Error(), nil
	}
	return "", nil
}

// StartMigration starts the migration run of an upgrade (issue 17):
// scenario of the service at commit (validated, with its input's
// defaults) runs on the incarnation, which stays on its old commit until
// the run commits — then, in the same transaction as the new state, which
// must fit the new state_schema, it moves to ref/commit. A migration that
// fails leaves the incarnation on the old commit (error_locked, as any
// failed run).
func (e *Engine) StartMigration(ctx context.Context, incarnation, ref, commit, scenario, archonID string) (id string, err error) {
	if err := e.reserve(); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			e.release()
		}
	}()
	inc, err := e.cfg.Store.GetIncarnation(ctx, incarnation)
	if err != nil {
		return "", fmt.Errorf("incarnation %s: %w", incarnation, err)
	}
	if inc.ActiveRun != "" {
		return "", &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("incarnation %q has an active run %s: upgrade it when the run ended", incarnation, inc.ActiveRun), Details: inc.ActiveRun}
	}
	svc, err := e.cfg.Services.Open(ctx, inc.Service, commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", inc.Service, commit, err)
	}
	sc := svc.Scenarios[scenario]
	if sc == nil {
		names := slices.Sorted(maps.Keys(svc.Scenarios))
		return "", domain.Errorf(domain.CodeInvalid, "migrate: service %s at %s has no scenario %q (it has: %s)", inc.Service, short(commit), scenario, strings.Join(names, ", "))
	}
	resolved, err := sc.Input.Resolve(nil)
	if err != nil {
		return "", fmt.Errorf("migrate: scenario %s runs with its input's defaults: %w", scenario, err)
	}
	run := e.newRun(incarnation, scenario, maskInput(sc, resolved), false, archonID)
	run.Commit, run.UpgradeRef, run.Members = commit, ref, sortedMembers(inc.Members)
	if err := e.cfg.Store.StartRun(ctx, run); err != nil {
		return "", fmt.Errorf("starting the migration %s on %s: %w", scenario, incarnation, err)
	}
	inc.Status = store.IncarnationApplying
	e.log.InfoContext(ctx, "upgrade with migration started", "apply_id", run.ID, "incarnation", incarnation, "ref", ref, "commit", commit, "from_commit", inc.Commit, "scenario", scenario)
	e.launch(e.newRunner(run, inc, svc, sc, resolved))
	return run.ID, nil
}
