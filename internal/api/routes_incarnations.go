package api

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesIncarnations) }

// routesIncarnations serves incarnations: creating them, running their
// scenarios, reading their state and history, unlocking, upgrading and
// changing members. Operators drive runs; viewers read.
func (s *Server) routesIncarnations(rt *Router) {
	if s.cfg.Engine == nil {
		return
	}
	rt.Handle("POST /v1/incarnations", onBody(auth.PermCreateIncarnation, auth.ObjService, "service"), s.createIncarnation)
	rt.Handle("GET /v1/incarnations", listed(), s.listIncarnations)
	rt.Handle("GET /v1/incarnations/{name}", onPath(auth.PermRead, auth.ObjIncarnation, "name"), s.getIncarnation)
	rt.Handle("DELETE /v1/incarnations/{name}", onPath(auth.PermDeleteIncarnation, auth.ObjIncarnation, "name"), s.deleteIncarnation)
	rt.Handle("GET /v1/incarnations/{name}/history", onPath(auth.PermRead, auth.ObjIncarnation, "name"), s.incarnationHistory)
	rt.Handle("POST /v1/incarnations/{name}/runs", runNeed(), s.startRun)
	rt.Handle("POST /v1/incarnations/{name}/unlock", onPath(auth.PermUnlock, auth.ObjIncarnation, "name"), s.unlockIncarnation)
	rt.Handle("POST /v1/incarnations/{name}/members", onPath(auth.PermCreateIncarnation, auth.ObjIncarnation, "name"), s.addMembers)
	rt.Handle("DELETE /v1/incarnations/{name}/members", onPath(auth.PermCreateIncarnation, auth.ObjIncarnation, "name"), s.removeMembers)
	if s.cfg.Catalog != nil {
		// Which code the fleet runs is an admin's decision (SPEC §10.2,
		// audit M3): operators run scenarios of the pinned commit.
		rt.Handle("POST /v1/incarnations/{name}/upgrade", onPath(auth.PermUpgrade, auth.ObjIncarnation, "name"), s.upgradeIncarnation)
	}
}

func (s *Server) createIncarnation(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CreateIncarnationRequest
	MaskAuditValues(r, "input")
	if err := decode(r, &req); err != nil {
		return err
	}
	SetAuditTarget(r, req.Name)
	if req.Service == "" {
		return invalidf("service is required: the registered service to incarnate")
	}
	id, err := s.cfg.Engine.CreateIncarnation(r.Context(), engine.CreateRequest{
		Name: req.Name, Service: req.Service, Covens: req.Covens, Input: req.Input, Essence: req.Essence, ArchonID: p.ArchonID,
	})
	if err != nil {
		return err
	}
	s.auditInput(r, req.Input, id)
	writeJSON(w, http.StatusAccepted, apitypes.Accepted{ApplyID: id})
	return nil
}

func (s *Server) listIncarnations(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	incs, err := s.store.ListIncarnations(r.Context())
	if err != nil {
		return err
	}
	acc, err := s.auth.Access(r.Context(), p)
	if err != nil {
		return err
	}
	incs = visibleIncarnations(acc, incs)
	page, err := pageSlice(w, r, incs, 100, func(i store.Incarnation) string { return i.Name })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireIncarnation))
	return nil
}

func (s *Server) getIncarnation(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireIncarnation(inc))
	return nil
}

// incarnation reads the incarnation named in the path.
func (s *Server) incarnation(r *http.Request) (store.Incarnation, error) {
	name := r.PathValue("name")
	inc, err := s.store.GetIncarnation(r.Context(), name)
	if err != nil {
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return store.Incarnation{}, notFoundf("incarnation %q does not exist", name)
		}
		return store.Incarnation{}, err
	}
	return inc, nil
}

func (s *Server) deleteIncarnation(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	if err := s.destroyInstances(r, inc); err != nil {
		return err
	}
	if err := s.store.DeleteIncarnation(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// historyPage is GET …/history's default page size.
const historyPage = 50

func (s *Server) incarnationHistory(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if _, err := s.incarnation(r); err != nil {
		return err
	}
	after, limit, err := pageParams(r, historyPage)
	if err != nil {
		return err
	}
	var before int64
	if after != "" {
		if before, err = strconv.ParseInt(after, 10, 64); err != nil || before < 1 {
			return invalidf("after must be a history entry id, not %q", after)
		}
	}
	hist, err := s.store.ListHistoryPage(r.Context(), r.PathValue("name"), before, limit+1)
	if err != nil {
		return err
	}
	hist = trimPage(w, r, hist, limit, func(h store.Snapshot) string { return strconv.FormatInt(h.ID, 10) })
	for i := range hist {
		hist[i].Results = "/v1/runs/" + url.PathEscape(hist[i].RunID)
	}
	writeJSON(w, http.StatusOK, wireList(hist, wireSnapshot))
	return nil
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.StartRunRequest
	MaskAuditValues(r, "input")
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Scenario == "" {
		return invalidf("scenario is required")
	}
	id, err := s.cfg.Engine.StartRun(r.Context(), r.PathValue("name"), req.Scenario, req.Input, req.Check, p.ArchonID)
	if err != nil {
		return err
	}
	s.auditInput(r, req.Input, id)
	SetAuditTarget(r, r.PathValue("name")+"/"+id)
	writeJSON(w, http.StatusAccepted, apitypes.Accepted{ApplyID: id})
	return nil
}

// auditInput keeps the values of secret inputs out of the audit entry of a
// call that started a run (SPEC §10.2). Only the scenario knows which
// inputs are secret, so the handler masks every value of "input" until the
// run exists; then the run's stored input, masked by the engine, shows the
// given values that are not secret.
func (s *Server) auditInput(r *http.Request, input map[string]any, runID string) {
	run, err := s.store.GetRun(r.Context(), runID)
	if input == nil || err != nil {
		return
	}
	shown := make(map[string]any, len(input))
	for k := range input {
		shown[k] = run.Input[k]
	}
	SetAuditField(r, "input", shown)
}

func (s *Server) unlockIncarnation(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.UnlockRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Reason) == "" {
		return invalidf("reason is required: say why the hosts are known to be consistent again (it is audited)")
	}
	if _, err := s.incarnation(r); err != nil {
		return err
	}
	if err := s.store.Unlock(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	return s.writeIncarnation(w, r)
}

func (s *Server) upgradeIncarnation(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.UpgradeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Ref) == "" {
		return invalidf("ref is required: a branch, tag or commit of the service")
	}
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	if inc.ActiveRun != "" {
		return &domain.Error{Code: domain.CodeConflict, Message: "incarnation " + inc.Name + " has an active run " + inc.ActiveRun + ": upgrade it when the run ended", Details: inc.ActiveRun}
	}
	svc, err := s.cfg.Catalog.Get(r.Context(), inc.Service)
	if err != nil {
		return err
	}
	commit, err := s.cfg.Catalog.Resolve(r.Context(), svc.Git, req.Ref)
	if err != nil {
		return err
	}
	// Materialize and validate the commit (every scenario) before pinning
	// it: an invalid service is refused here, not at the next run.
	if _, err := s.cfg.Catalog.Open(r.Context(), inc.Service, commit); err != nil {
		return err
	}
	if req.Migrate != "" {
		// The migration runs on the new commit; its commit moves the
		// incarnation there, with a state that must fit the new schema.
		id, err := s.cfg.Engine.StartMigration(r.Context(), inc.Name, req.Ref, commit, req.Migrate, p.ArchonID)
		if err != nil {
			return err
		}
		SetAuditTarget(r, inc.Name+"/"+id)
		writeJSON(w, http.StatusAccepted, apitypes.Accepted{ApplyID: id})
		return nil
	}
	why, err := s.cfg.Engine.StateFits(r.Context(), inc, commit)
	if err != nil {
		return err
	}
	if why != "" {
		return &domain.Error{Code: domain.CodeUnprocessable, Details: why,
			Message: "the committed state of " + inc.Name + " does not fit the state_schema of " + req.Ref + " (" + why + "): upgrade with a migration scenario (migrate) whose state_changes make it fit"}
	}
	if err := s.store.SetIncarnationCommit(r.Context(), inc.Name, req.Ref, commit); err != nil {
		return err
	}
	return s.writeIncarnation(w, r)
}

func (s *Server) addMembers(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	sids, err := s.membersRequest(r)
	if err != nil {
		return err
	}
	for _, sid := range sids {
		soul, err := s.store.GetSoul(r.Context(), sid)
		switch {
		case domain.ErrorCode(err) == domain.CodeNotFound:
			return invalidf("soul %q is not registered", sid)
		case err != nil:
			return err
		case soul.Status == store.SoulPending || soul.Status == store.SoulRejected:
			return invalidf("soul %q is %s: only accepted souls can be members", sid, soul.Status)
		}
	}
	if err := s.store.AddMembers(r.Context(), r.PathValue("name"), sids); err != nil {
		return err
	}
	return s.writeIncarnation(w, r)
}

func (s *Server) removeMembers(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	sids, err := s.membersRequest(r)
	if err != nil {
		return err
	}
	if err := s.store.RemoveMembers(r.Context(), r.PathValue("name"), sids); err != nil {
		return err
	}
	return s.writeIncarnation(w, r)
}

// membersRequest decodes a members change; membership does not change
// under a running scenario.
func (s *Server) membersRequest(r *http.Request) ([]string, error) {
	var req apitypes.MembersRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if len(req.SIDs) == 0 {
		return nil, invalidf("sids is required: the souls to add or remove")
	}
	inc, err := s.incarnation(r)
	if err != nil {
		return nil, err
	}
	if inc.ActiveRun != "" {
		return nil, &domain.Error{Code: domain.CodeConflict, Message: "incarnation " + inc.Name + " has an active run " + inc.ActiveRun + ": change its members when the run ended", Details: inc.ActiveRun}
	}
	sids := slices.Clone(req.SIDs)
	slices.Sort(sids)
	return slices.Compact(sids), nil
}

func (s *Server) writeIncarnation(w http.ResponseWriter, r *http.Request) error {
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireIncarnation(inc))
	return nil
}

// limitParam reads ?limit= (def when absent).
func limitParam(r *http.Request, def int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return 0, invalidf("limit must be an integer in 1..10000, not %q", v)
	}
	return n, nil
}
