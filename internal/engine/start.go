package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// CreateScenario is the scenario run when an incarnation is created.
const CreateScenario = "create"

// CreateRequest asks for a new incarnation.
type CreateRequest struct {
	Name    string
	Service string
	// Covens select the members: every accepted soul carrying all of them,
	// computed once now and stored as the membership relation.
	Covens []string
	// Input is the input of the create scenario.
	Input map[string]any
	// Essence overrides the service's essence (merged last).
	Essence  map[string]any
	ArchonID string
}

var incarnationName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// CreateIncarnation records a new incarnation of a service at the commit
// its ref points at now, with its members, and starts its create scenario
// (a service without one gets an empty run that commits an empty state).
// It returns the run's apply_id.
func (e *Engine) CreateIncarnation(ctx context.Context, req CreateRequest) (id string, err error) {
	if err := e.reserve(); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			e.release()
		}
	}()
	if !incarnationName.MatchString(req.Name) || strings.Contains(req.Name, "..") {
		return "", domain.Errorf(domain.CodeInvalid, "incarnation name %q is invalid: use 1-63 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit", req.Name)
	}
	if len(req.Covens) == 0 {
		return "", domain.Errorf(domain.CodeInvalid, "covens are required: the incarnation's members are the accepted souls carrying all of them")
	}
	svcRec, err := e.cfg.Store.GetService(ctx, req.Service)
	if errors.Is(err, domain.ErrNotFound) {
		return "", domain.Errorf(domain.CodeNotFound, "service %q is not registered: register it first (POST /v1/services, soulctl service register)", req.Service)
	}
	if err != nil {
		return "", fmt.Errorf("service %s: %w", req.Service, err)
	}
	svc, err := e.cfg.Services.Open(ctx, svcRec.Name, svcRec.Commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", svcRec.Name, svcRec.Commit, err)
	}
	sc := svc.Scenarios[CreateScenario]
	if sc == nil {
		sc = &dsl.Scenario{Name: CreateScenario}
	}
	input, err := sc.Input.Resolve(req.Input)
	if err != nil {
		return "", fmt.Errorf("scenario %s: %w", CreateScenario, err)
	}
	if err := svc.CheckEssenceOverrides(req.Essence); err != nil {
		return "", err
	}
	if err := e.checkSecrets(ctx, svc, sc, svcRec.Name, req.Name); err != nil {
		return "", err
	}
	members, err := e.membersOf(ctx, req.Covens)
	if err != nil {
		return "", err
	}
	if err := e.checkCovens(ctx, sc, req.Covens); err != nil {
		return "", err
	}
	if err := e.checkDelegates(ctx, sc, req.Name, members); err != nil {
		return "", err
	}
	if len(members) == 0 && !provisions(sc) {
		// Like an inventory pattern matching no host: almost always a typo,
		// and an incarnation on nothing would commit state no host has.
		return "", domain.Errorf(domain.CodeUnprocessable,
			"no accepted soul carries all of the covens %s: check the covens (soulctl souls list --coven …) or accept the souls first", strings.Join(req.Covens, ", "))
	}
	inc := store.Incarnation{
		Name: req.Name, Service: svcRec.Name, Ref: svcRec.Ref, Commit: svcRec.Commit,
		Covens: req.Covens, Input: maskInput(sc, input), Essence: req.Essence,
		Members: members, CreatedAt: e.now(),
	}
	run := e.newRun(inc.Name, CreateScenario, inc.Input, false, req.ArchonID)
	run.Commit, run.Members = inc.Commit, members
	if err := e.cfg.Store.CreateIncarnation(ctx, inc, run); err != nil {
		return "", err // the store's message starts with "creating incarnation <name>"
	}
	inc.Status = store.IncarnationApplying
	inc.State = map[string]any{}
	e.launch(e.newRunner(run, inc, svc, sc, input))
	return run.ID, nil
}

// membersOf lists the accepted souls (connected or disconnected) carrying
// every coven, sorted by SID.
func (e *Engine) membersOf(ctx context.Context, covens []string) ([]string, error) {
	souls, err := e.cfg.Store.ListSouls(ctx, store.SoulFilter{Covens: covens, Brief: true})
	if err != nil {
		return nil, fmt.Errorf("listing souls: %w", err)
	}
	out := []string{}
	for _, s := range souls {
		if s.Status == store.SoulConnected || s.Status == store.SoulDisconnected {
			out = append(out, s.SID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// StartRun starts scenario on an incarnation and returns the apply_id. A
// run already active is a conflict whose Details is its apply_id; an
// error_locked incarnation refuses runs until unlocked; an unknown scenario
// or invalid input is CodeInvalid. check runs the scenario in check mode
// (SPEC §8.6).
func (e *Engine) StartRun(ctx context.Context, incarnation, scenario string, input map[string]any, check bool, archonID string) (id string, err error) {
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
		return "", &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("incarnation %q has an active run %s", incarnation, inc.ActiveRun), Details: inc.ActiveRun}
	}
	if inc.Status == store.IncarnationErrorLocked {
		return "", domain.Errorf(domain.CodeConflict, "incarnation %q is error_locked (%s): unlock it first", incarnation, inc.LockReason)
	}
	svc, err := e.cfg.Services.Open(ctx, inc.Service, inc.Commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", inc.Service, inc.Commit, err)
	}
	sc := svc.Scenarios[scenario]
	if sc == nil {
		names := slices.Sorted(maps.Keys(svc.Scenarios))
		return "", domain.Errorf(domain.CodeInvalid, "service %s has no scenario %q (it has: %s)", inc.Service, scenario, strings.Join(names, ", "))
	}
	resolved, err := sc.Input.Resolve(input)
	if err != nil {
		return "", fmt.Errorf("scenario %s: %w", scenario, err)
	}
	if err := e.checkSecrets(ctx, svc, sc, inc.Service, inc.Name); err != nil {
		return "", err
	}
	if err := e.checkCovens(ctx, sc, inc.Covens); err != nil {
		return "", err
	}
	if err := e.checkDelegates(ctx, sc, inc.Name, inc.Members); err != nil {
		return "", err
	}
	run := e.newRun(incarnation, scenario, maskInput(sc, resolved), check, archonID)
	run.Commit, run.Members = inc.Commit, sortedMembers(inc.Members)
	if err := e.cfg.Store.StartRun(ctx, run); err != nil {
		return "", fmt.Errorf("starting %s on %s: %w", scenario, incarnation, err)
	}
	if !check {
		inc.Status = store.IncarnationApplying
	}
	e.launch(e.newRunner(run, inc, svc, sc, resolved))
	return run.ID, nil
}

func (e *Engine) newRun(incarnation, scenario string, input map[string]any, check bool, archonID string) store.Run {
	return store.Run{
		ID: e.cfg.NewID(), Incarnation: incarnation, Scenario: scenario, Input: input,
		Check: check, Status: store.RunPending, ArchonID: archonID, KeeperID: e.cfg.KeeperID,
		CreatedAt: e.now(),
	}
}

// secretValues are the strings masked in everything a run stores or
// streams: the values of the scenario's secret inputs.
func secretValues(sc *dsl.Scenario, input map[string]any) []string {
	var out []string
	for _, name := range sc.Input.Secrets() {
		if s := secretString(input[name]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func secretString(v any) string {
	if v == nil {
		return ""
	}
	return expr.Stringify(v)
}

// maskInput returns input with the values of secret inputs replaced by
// ****, as it is stored with the run and the incarnation.
func maskInput(sc *dsl.Scenario, input map[string]any) map[string]any {
	if input == nil {
		return nil
	}
	out := maps.Clone(input)
	for _, name := range sc.Input.Secrets() {
		if out[name] != nil {
			out[name] = executor.MaskText
		}
	}
	return out
}
