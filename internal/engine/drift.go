package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/store"
)

// DriftCheck starts a drift check of an incarnation (SPEC §8.9): scenario
// ("" = create) in check mode with the committed input: for each input
// the scenario declares, the committed state's value of that name, else
// the incarnation's creation input (secret values are stored masked, so
// secret inputs take their defaults). The run reports,
// per host, the tasks that would change, with their diffs; when it ends
// the report replaces the incarnation's last drift report. Like any check
// run it changes no host and no state and never locks the incarnation,
// but it takes the run slot while it runs (a conflict when a run is
// active).
func (e *Engine) DriftCheck(ctx context.Context, incarnation, scenario, archonID string) (id string, err error) {
	if scenario == "" {
		scenario = CreateScenario
	}
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
		return "", &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("incarnation %q has an active run %s: check drift when it ended", incarnation, inc.ActiveRun), Details: inc.ActiveRun}
	}
	svc, err := e.cfg.Services.Open(ctx, inc.Service, inc.Commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", inc.Service, inc.Commit, err)
	}
	sc := svc.Scenarios[scenario]
	if sc == nil {
		if scenario != CreateScenario {
			names := slices.Sorted(maps.Keys(svc.Scenarios))
			return "", domain.Errorf(domain.CodeInvalid, "service %s has no scenario %q (it has: %s)", inc.Service, scenario, strings.Join(names, ", "))
		}
		sc = &dsl.Scenario{Name: CreateScenario}
	}
	resolved, err := sc.Input.Resolve(driftInput(sc, inc.Input, unsealedState(inc)))
	if err != nil {
		return "", fmt.Errorf("drift check of %s with the incarnation's input: scenario %s: %w", incarnation, scenario, err)
	}
	run := e.newRun(incarnation, scenario, maskInput(sc, resolved), true, archonID)
	run.Drift, run.Commit, run.Members = true, inc.Commit, sortedMembers(inc.Members)
	if err := e.cfg.Store.StartRun(ctx, run); err != nil {
		return "", fmt.Errorf("starting a drift check of %s: %w", incarnation, err)
	}
	e.launch(e.newRunner(run, inc, svc, sc, resolved))
	return run.ID, nil
}

// driftInput is the input a drift check runs with: for each input sc
// declares, the committed state's value of the same name (what the last
// runs applied: a rolling-restart that committed max_memory), else the
// incarnation's creation input; masked secrets are left out (defaults
// apply).
func driftInput(sc *dsl.Scenario, created, state map[string]any) map[string]any {
	out := map[string]any{}
	secret := sc.Input.Secrets()
	for _, name := range sc.Input.Names() {
		if v, ok := state[name]; ok && !slices.Contains(secret, name) {
			out[name] = v
			continue
		}
		if v, ok := created[name]; ok && v != executor.MaskText {
			out[name] = v
		}
	}
	return out
}

// reportDrift builds the drift report of a finished drift run and keeps
// it as the incarnation's last one. A host that did not answer is
// unknown; when the check did not complete (a task failed, or it was
// cancelled), hosts without a change found are unknown too — an incomplete check
// proves nothing clean.
func (r *runner) reportDrift(ctx context.Context, status, msg string) {
	rep := r.driftReport(status, msg)
	if err := r.e.cfg.Store.PutDriftReport(ctx, r.inc.Name, rep); err != nil && !errors.Is(err, domain.ErrNotFound) {
		r.e.log.ErrorContext(ctx, "recording the drift report failed", "apply_id", r.run.ID, "incarnation", r.inc.Name, "err", err)
	}
}

func (r *runner) driftReport(status, msg string) store.DriftReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := store.DriftReport{RunID: r.run.ID, Scenario: r.sc.Name, Hosts: map[string]store.DriftHost{}, CheckedAt: r.e.now()}
	if status != store.RunSucceeded {
		rep.Error = executor.MaskString(msg, r.secrets)
	}
	// A lost host does not stop the check elsewhere; a failed task
	// (fail-fast) or a cancel does.
	incomplete := r.failure != "" || status == store.RunCancelled
	for _, sid := range r.members {
		h := store.DriftHost{Status: store.DriftClean}
		var failed string
		for _, t := range r.idx.bySeq {
			res, ok := r.results[t][sid]
			if !ok || t.Block != nil || t.IsProbe() {
				continue
			}
			if res.Failed && !res.Unreachable && failed == "" {
				failed = fmt.Sprintf("task %q failed in check mode: %s", executor.TaskName(t), failReason(res))
			}
			if res.Changed {
				h.Tasks = append(h.Tasks, store.DriftTask{
					Path: t.Path, Task: executor.TaskName(t),
					Msg:  executor.MaskString(res.Msg, r.secrets),
					Diff: executor.MaskString(capOf(res.Diff, r.e.cfg.OutputCap), r.secrets),
				})
			}
		}
		switch lost, isLost := r.unreachable[sid]; {
		case isLost:
			h = store.DriftHost{Status: store.DriftUnknown, Msg: fmt.Sprintf("unreachable (in %q): drift unknown", lost), Tasks: h.Tasks}
		case len(h.Tasks) > 0:
			h.Status = store.DriftDrifted
		case failed != "":
			h.Status, h.Msg = store.DriftUnknown, failed
		case incomplete:
			h.Status, h.Msg = store.DriftUnknown, "the check did not complete"
		}
		if h.Status == store.DriftDrifted {
			rep.Drifted = true
			rep.Tasks += len(h.Tasks)
		}
		rep.Hosts[sid] = h
	}
	return rep
}

func capOf(s string, limit int) string {
	out, _ := capText(s, limit)
	return out
}

// DriftDue lists the incarnations whose drift schedule is due at now: no
// report yet, or the last one older than the schedule's interval.
func DriftDue(ds []store.Drift, now time.Time) []store.Drift {
	var out []store.Drift
	for _, d := range ds {
		if d.Schedule == nil || d.Schedule.Every <= 0 {
			continue
		}
		if d.Report == nil || !now.Before(d.Report.CheckedAt.Add(d.Schedule.Every)) {
			out = append(out, d)
		}
	}
	return out
}
