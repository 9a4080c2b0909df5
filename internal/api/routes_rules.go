package api

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesRules) }

// routesRules serves rules, their history and notification endpoints
// (SPEC §17). Keeper-wide rules and endpoints are admin's; operators
// pause and resume the rules of incarnations; viewers read.
func (s *Server) routesRules(rt *Router) {
	rt.Handle("GET /v1/rules", onKeeper(auth.PermRead), s.listRules)
	rt.Handle("GET /v1/rules/history", onKeeper(auth.PermRead), s.ruleHistory)
	rt.Handle("PUT /v1/keeper-rules/{name}", onKeeper(auth.PermManageKeeper), s.putKeeperRule)
	rt.Handle("DELETE /v1/keeper-rules/{name}", onKeeper(auth.PermManageKeeper), s.deleteKeeperRule)
	rt.Handle("POST /v1/rules/{scope}/{name}/pause", ruleNeed(), s.pauseRule)
	rt.Handle("POST /v1/rules/{scope}/{name}/resume", ruleNeed(), s.resumeRule)
	rt.Handle("GET /v1/notify/endpoints", onKeeper(auth.PermManageKeeper), s.listEndpoints)
	rt.Handle("PUT /v1/notify/endpoints/{name}", onKeeper(auth.PermManageKeeper), s.putEndpoint)
	rt.Handle("DELETE /v1/notify/endpoints/{name}", onKeeper(auth.PermManageKeeper), s.deleteEndpoint)
	rt.Handle("POST /v1/notify/endpoints/{name}/test", onKeeper(auth.PermManageKeeper), s.testEndpoint)
	rt.Handle("GET /v1/notify/deliveries", onKeeper(auth.PermManageKeeper), s.listDeliveries)
}

func (s *Server) rulesChanged(incarnation string) {
	if s.cfg.Rules != nil {
		s.cfg.Rules.Invalidate(incarnation)
	}
}

func wireRule(id, scope, service, owner string, r *dsl.Rule, paused map[string]bool) apitypes.Rule {
	target := r.Do.Scenario
	switch r.Do.Kind {
	case dsl.ActionProcedure:
		target = r.Do.Procedure
	case dsl.ActionNotify:
		target = strings.Join(r.Do.Endpoints, ",")
	}
	return apitypes.Rule{ID: id, Name: r.Name, Scope: scope, Service: service, Description: r.Description, On: r.On, If: r.If,
		Action: r.Do.Kind, Target: target, Cooldown: r.Cooldown.String(), MaxPerHour: r.MaxPerHour, MaxConcurrent: r.MaxConcurrent,
		Dedup: r.Dedup, ResolveIf: r.ResolveIf, DryRun: r.DryRun, Paused: paused[id] || paused["*"], Owner: owner}
}

// listRules lists the Keeper-wide rules and the rules of every
// incarnation's service at its pinned commit.
func (s *Server) listRules(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ctx := r.Context()
	ps, err := s.store.ListRulePauses(ctx)
	if err != nil {
		return err
	}
	paused := map[string]bool{}
	for _, p := range ps {
		paused[p.Rule] = true
	}
	out := []apitypes.Rule{}
	krs, err := s.store.ListKeeperRules(ctx)
	if err != nil {
		return err
	}
	for _, kr := range krs {
		rule, err := dsl.ParseRule(kr.Name, []byte(kr.Source))
		if err != nil {
			continue
		}
		out = append(out, wireRule(rules.ID("", kr.Name), "keeper", "", kr.Owner, rule, paused))
	}
	if s.cfg.Catalog != nil {
		incs, err := s.store.ListIncarnations(ctx)
		if err != nil {
			return err
		}
		for _, inc := range incs {
			svc, err := s.cfg.Catalog.Open(ctx, inc.Service, inc.Commit)
			if err != nil || svc == nil {
				continue
			}
			names := make([]string, 0, len(svc.Rules))
			for n := range svc.Rules {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				out = append(out, wireRule(rules.ID(inc.Name, n), inc.Name, inc.Service, "", svc.Rules[n], paused))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) putKeeperRule(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.PutRuleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	rule, err := dsl.ParseRule(name, []byte(req.Source))
	if err != nil {
		return err
	}
	if err := s.store.PutKeeperRule(r.Context(), store.KeeperRule{Name: name, Source: req.Source, Owner: p.ArchonID}); err != nil {
		return err
	}
	s.rulesChanged("")
	writeJSON(w, http.StatusOK, wireRule(rules.ID("", name), "keeper", "", p.ArchonID, rule, nil))
	return nil
}

func (s *Server) deleteKeeperRule(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.store.DeleteKeeperRule(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	s.rulesChanged("")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ruleID checks the caller may pause or resume scope/name: a Keeper-wide
// rule needs manage_keeper, a service rule an existing incarnation.
func (s *Server) ruleID(ctx context.Context, r *http.Request, p auth.Principal) (string, error) {
	scope, name := r.PathValue("scope"), r.PathValue("name")
	if scope == "keeper" {
		// A Keeper-wide rule is the Keeper's configuration.
		if err := s.can(r, p, auth.PermManageKeeper); err != nil {
			return "", err
		}
		if name == "*" {
			return "*", nil
		}
		if _, err := s.store.GetKeeperRule(ctx, name); err != nil {
			return "", err
		}
		return rules.ID("", name), nil
	}
	if _, err := s.store.GetIncarnation(ctx, scope); err != nil {
		return "", err
	}
	return rules.ID(scope, name), nil
}

func (s *Server) pauseRule(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.PauseRuleRequest
	if err := decodeOptional(r, &req); err != nil {
		return err
	}
	id, err := s.ruleID(r.Context(), r, p)
	if err != nil {
		return err
	}
	if err := s.store.PutRulePause(r.Context(), store.RulePause{Rule: id, By: p.ArchonID, Reason: req.Reason}); err != nil {
		return err
	}
	s.rulesChanged("")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) resumeRule(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	id, err := s.ruleID(r.Context(), r, p)
	if err != nil {
		return err
	}
	if err := s.store.DeleteRulePause(r.Context(), id); err != nil {
		return err
	}
	s.rulesChanged("")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func wireFiring(f store.Firing) apitypes.Firing {
	return apitypes.Firing{ID: f.ID, Rule: f.Rule, Incarnation: f.Incarnation, EventKind: f.EventKind, Event: f.Event,
		Incident: f.IncidentKey, Decision: f.Decision, Reason: f.Reason, Action: f.Action, ApplyID: f.RunID,
		TaskIDs: f.TaskIDs, Error: f.Error, Owner: f.Owner, At: f.At}
}

func (s *Server) ruleHistory(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	q := r.URL.Query()
	f := store.FiringFilter{Rule: q.Get("rule"), Incarnation: q.Get("incarnation"), Decision: q.Get("decision")}
	for key, dst := range map[string]*int64{"before": &f.Before} {
		if v := q.Get(key); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return invalidf("%s must be a firing id", key)
			}
			*dst = n
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return invalidf("limit must be from 1 to 1000")
		}
		f.Limit = n
	}
	fs, err := s.store.ListFirings(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(fs, wireFiring))
	return nil
}

func wireEndpoint(e store.NotifyEndpoint) apitypes.Endpoint {
	return apitypes.Endpoint{Name: e.Name, Kind: e.Kind, URL: e.URL, Config: e.Config, HasSecret: e.HasSecret, Owner: e.Owner,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	es, err := s.store.ListEndpoints(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(es, wireEndpoint))
	return nil
}

func (s *Server) putEndpoint(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.PutEndpointRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	e := store.NotifyEndpoint{Name: r.PathValue("name"), Kind: req.Kind, URL: req.URL, Config: req.Config, Owner: p.ArchonID}
	if err := notify.Validate(e); err != nil {
		return err
	}
	old, err := s.store.GetEndpoint(ctx, e.Name)
	switch {
	case err == nil:
		e.Sealed, e.CreatedAt = old.Sealed, old.CreatedAt
	case domain.ErrorCode(err) != domain.CodeNotFound:
		return err
	}
	if req.Secret != nil {
		if s.cfg.Secrets == nil {
			return domain.Errorf(domain.CodeUnavailable, "this keeper has no secrets key to seal the endpoint's secret")
		}
		e.Sealed = nil
		if *req.Secret != "" {
			if e.Sealed, err = s.cfg.Secrets.SealEndpoint(e.Name, *req.Secret); err != nil {
				return err
			}
		}
	}
	if err := s.store.PutEndpoint(ctx, e); err != nil {
		return err
	}
	got, err := s.store.GetEndpoint(ctx, e.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireEndpoint(got))
	return nil
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.store.DeleteEndpoint(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) notifier() *notify.Notifier {
	if s.cfg.Notifier != nil {
		return s.cfg.Notifier
	}
	var sealer notify.Sealer
	if s.cfg.Secrets != nil {
		sealer = s.cfg.Secrets
	}
	return notify.New(notify.Config{Store: s.store, Sealer: sealer})
}

func (s *Server) testEndpoint(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	name := r.PathValue("name")
	if err := s.notifier().Test(r.Context(), name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.NotifyTestResult{Endpoint: name, Delivered: true})
	return nil
}

func wireDelivery(d store.Delivery) apitypes.Delivery {
	return apitypes.Delivery{ID: d.ID, Endpoint: d.Endpoint, FiringID: d.FiringID, Status: d.Status, Attempts: d.Attempts,
		LastError: d.LastError, NextAt: d.NextAt, CreatedAt: d.CreatedAt}
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.DeliveryPending, store.DeliveryDelivered, store.DeliveryDead:
	default:
		return invalidf("status must be pending, delivered or dead")
	}
	ds, err := s.store.ListDeliveries(r.Context(), status, 200)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(ds, wireDelivery))
	return nil
}
