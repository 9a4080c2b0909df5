package keeper

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/healthkeeper"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/rules"
)

// newRules builds the rules engine and the notifier (SPEC §17): the
// engine's actions are this keeper's run engine, Checker and notifier,
// each called as the rule's owner.
func (k *Keeper) newRules() {
	k.notifier = notify.New(notify.Config{Store: k.store, Sealer: k.secrets, Logger: k.log.With("component", "notify")})
	k.rules = rules.New(rules.Config{
		Store:    k.store,
		Services: k.serviceRules,
		Actions:  ruleActions{k},
		Owner:    k.ruleOwner,
		Logger:   k.log.With("component", "rules"),
	})
}

// ruleActions are the rules' actions on this keeper.
type ruleActions struct{ k *Keeper }

func (a ruleActions) StartRun(ctx context.Context, inc, scenario string, input map[string]any, check bool, archonID string) (string, error) {
	perm := auth.PermRun
	if check {
		perm = auth.PermCheckRun
	}
	if err := a.k.authorizeOwner(ctx, archonID, perm, auth.Object{Kind: auth.ObjIncarnation, Name: inc}); err != nil {
		return "", err
	}
	inst, err := a.k.store.GetIncarnation(ctx, inc)
	if err != nil {
		return "", err
	}
	// The same guard the API applies: a secret may flow only into
	// inputs declared secret (rules cannot read secrets, so this holds).
	if err := a.k.engine.CheckSecretInputs(ctx, inc, inst.Service, scenario, input, nil); err != nil {
		return "", err
	}
	id, err := a.k.engine.StartRun(ctx, inc, scenario, input, check, archonID)
	if err == nil {
		_ = a.k.auth.Record(ctx, auth.Principal{ArchonID: archonID}, "rule.run", inc, map[string]any{"scenario": scenario, "apply_id": id})
	}
	return id, err
}

func (a ruleActions) ExecuteProcedure(ctx context.Context, name string, vars map[string]any, archonID string) ([]string, error) {
	if err := a.k.authorizeOwner(ctx, archonID, auth.PermExecuteProcedures, auth.Keeper()); err != nil {
		return nil, err
	}
	tasks, err := a.k.checker.Execute(ctx, checker.ExecRequest{Procedure: name, Vars: vars, OnBehalfOf: archonID})
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	if err == nil {
		_ = a.k.auth.Record(ctx, auth.Principal{ArchonID: archonID}, "rule.procedure", name, map[string]any{"tasks": ids})
	}
	return ids, err
}

func (a ruleActions) WaitTasks(ctx context.Context, ids []string) {
	for _, id := range ids {
		_, _ = a.k.checker.Wait(ctx, id)
	}
}

func (a ruleActions) Notify(ctx context.Context, endpoints []string, n rules.Notification, firingID int64) error {
	return a.k.notifier.Notify(ctx, endpoints, n, firingID)
}

// ruleOwner refuses an owner that cannot act: gone, disabled, or holding
// none of the permissions rules act with (run, check_run,
// execute_procedures) on any scope — like the Checker's calls. Each action
// then asks the authorizer for its own decision (ruleActions).
func (k *Keeper) ruleOwner(ctx context.Context, archonID string) error {
	if archonID == "" {
		return domain.Errorf(domain.CodeForbidden, "the rule has no owner: nobody it could act for")
	}
	a, err := k.store.GetArchon(ctx, archonID)
	if err != nil {
		return fmt.Errorf("the rule's owner %s: %w", archonID, err)
	}
	if a.DisabledAt != nil {
		return domain.Errorf(domain.CodeForbidden, "the rule's owner %s is disabled", a.Name)
	}
	acc, err := k.auth.Access(ctx, auth.Principal{ArchonID: a.ID})
	if err != nil {
		return err
	}
	if !acc.Anywhere(auth.PermRun) && !acc.Anywhere(auth.PermCheckRun) && !acc.Anywhere(auth.PermExecuteProcedures) {
		return domain.Errorf(domain.CodeForbidden, "the rule's owner %s holds no run, check_run or execute_procedures permission anywhere: rules act as their owner", a.Name)
	}
	return nil
}

// authorizeOwner is the authorizer's decision for a rule's action taken
// for its owner; a refusal is audited like the API's.
func (k *Keeper) authorizeOwner(ctx context.Context, archonID string, perm auth.Permission, obj auth.Object) error {
	p := auth.Principal{ArchonID: archonID}
	d, err := k.auth.Decide(ctx, p, perm, obj)
	if err != nil {
		return err
	}
	if !d.Allowed {
		_ = k.auth.Record(ctx, p, "access.denied", obj.String(), map[string]any{"permission": string(perm), "reason": d.Reason, "via": "rule"})
	}
	return d.Err()
}

// serviceRules loads an incarnation's rules at its pinned commit; they act
// for the Archon who created the incarnation (its first run's).
func (k *Keeper) serviceRules(ctx context.Context, incarnation string) (string, map[string]*dsl.Rule, string, error) {
	inc, err := k.store.GetIncarnation(ctx, incarnation)
	if err != nil {
		return "", nil, "", err
	}
	svc, err := k.catalog.Open(ctx, inc.Service, inc.Commit)
	if err != nil {
		return inc.Service, nil, "", err
	}
	if len(svc.Rules) == 0 {
		return inc.Service, nil, "", nil
	}
	runs, err := k.store.ListRuns(ctx, incarnation, 0)
	if err != nil {
		return inc.Service, nil, "", err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.Before(runs[j].CreatedAt) })
	owner := ""
	for _, r := range runs {
		if r.ArchonID != "" {
			owner = r.ArchonID
			break
		}
	}
	return inc.Service, svc.Rules, owner, nil
}

// onHealthChange publishes a health transition or confirmation.
func (k *Keeper) onHealthChange(c healthkeeper.Change) {
	k.rules.Publish(rules.Event{Kind: dsl.EventHealthChanged, Incarnation: c.Incarnation, Time: c.Time, Fields: map[string]any{
		"check": c.Check, "sid": c.SID, "from": c.From, "to": c.To, "message": c.Message,
		"streak": int64(c.Streak), "duration_s": int64(c.Duration / time.Second), "service": k.serviceOf(c.Incarnation),
	}})
}

func (k *Keeper) serviceOf(incarnation string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	inc, err := k.store.GetIncarnation(ctx, incarnation)
	if err != nil {
		return ""
	}
	return inc.Service
}

// rulesRunEnded publishes run.ended (and drift.found for a drift check
// that found drift).
func (k *Keeper) rulesRunEnded(incarnation, runID, status string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rule := k.rules.RunEnded(ctx, runID)
	k.rules.Invalidate(incarnation) // the commit or members may have changed
	run, err := k.store.GetRun(ctx, runID)
	if err != nil {
		k.log.Warn("rules: reading an ended run", "apply_id", runID, "err", err)
		return
	}
	service := k.serviceOf(incarnation)
	k.rules.Publish(rules.Event{Kind: dsl.EventRunEnded, Incarnation: incarnation, Fields: map[string]any{
		"service": service, "scenario": run.Scenario, "apply_id": runID, "status": status, "error": run.Error,
		"check_mode": run.Check, "rule": rule,
	}})
	if !run.Drift {
		return
	}
	d, err := k.store.GetDrift(ctx, incarnation)
	if err != nil || d.Report == nil || !d.Report.Drifted || d.Report.RunID != runID {
		return
	}
	hosts := make([]any, 0, len(d.Report.Hosts))
	for sid := range d.Report.Hosts {
		hosts = append(hosts, sid)
	}
	k.rules.Publish(rules.Event{Kind: dsl.EventDriftFound, Incarnation: incarnation, Fields: map[string]any{
		"service": service, "scenario": d.Report.Scenario, "apply_id": runID, "hosts": hosts, "tasks": int64(d.Report.Tasks),
	}})
}

// soulEvent publishes soul.connected / soul.disconnected.
func (k *Keeper) soulEvent(kind, sid string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	covens := []any{}
	if s, err := k.store.GetSoul(ctx, sid); err == nil {
		for _, c := range s.Covens {
			covens = append(covens, c)
		}
	}
	k.rules.Publish(rules.Event{Kind: kind, Fields: map[string]any{"sid": sid, "covens": covens}})
}

// scheduleMissed publishes schedule.missed.
func (k *Keeper) scheduleMissed(id, procedure string, tick time.Time) {
	k.rules.Publish(rules.Event{Kind: dsl.EventScheduleMissed, Fields: map[string]any{
		"schedule_id": id, "procedure": procedure, "tick": tick.UTC().Format(time.RFC3339),
	}})
}

// Rules returns the rules engine.
func (k *Keeper) Rules() *rules.Engine { return k.rules }
