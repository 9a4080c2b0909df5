package api

import (
	"net/http"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesDrift) }

// MinDriftEvery is the shortest drift schedule interval.
const MinDriftEvery = time.Minute

// routesDrift serves drift checks and their schedules (SPEC §8.9) and the
// pending triggers (SPEC §8.3) of incarnations.
func (s *Server) routesDrift(rt *Router) {
	if s.cfg.Engine == nil {
		return
	}
	rt.Handle("POST /v1/incarnations/{name}/drift", onPath(auth.PermCheckRun, auth.ObjIncarnation, "name"), s.checkDrift)
	rt.Handle("GET /v1/incarnations/{name}/drift", onPath(auth.PermRead, auth.ObjIncarnation, "name"), s.getDrift)
	rt.Handle("PUT /v1/incarnations/{name}/drift/schedule", onPath(auth.PermCheckRun, auth.ObjIncarnation, "name"), s.setDriftSchedule)
	rt.Handle("DELETE /v1/incarnations/{name}/drift/schedule", onPath(auth.PermCheckRun, auth.ObjIncarnation, "name"), s.deleteDriftSchedule)
	rt.Handle("GET /v1/incarnations/{name}/triggers", onPath(auth.PermRead, auth.ObjIncarnation, "name"), s.listTriggers)
}

func (s *Server) checkDrift(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.DriftRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if _, err := s.incarnation(r); err != nil {
		return err
	}
	id, err := s.cfg.Engine.DriftCheck(r.Context(), r.PathValue("name"), req.Scenario, p.ArchonID)
	if err != nil {
		return err
	}
	SetAuditTarget(r, r.PathValue("name")+"/"+id)
	writeJSON(w, http.StatusAccepted, apitypes.Accepted{ApplyID: id})
	return nil
}

func (s *Server) getDrift(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if _, err := s.incarnation(r); err != nil {
		return err
	}
	return s.writeDrift(w, r)
}

func (s *Server) writeDrift(w http.ResponseWriter, r *http.Request) error {
	d, err := s.store.GetDrift(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireDrift(d))
	return nil
}

func (s *Server) setDriftSchedule(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.DriftSchedule
	if err := decode(r, &req); err != nil {
		return err
	}
	if every := time.Duration(req.Every); every < MinDriftEvery {
		return invalidf("every must be at least %s, not %s", MinDriftEvery, every)
	}
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	if req.Scenario == "" {
		req.Scenario = engine.CreateScenario
	}
	if s.cfg.Catalog != nil {
		svc, err := s.cfg.Catalog.Open(r.Context(), inc.Service, inc.Commit)
		if err != nil {
			return err
		}
		if svc.Scenarios[req.Scenario] == nil && req.Scenario != engine.CreateScenario {
			return &domain.Error{Code: domain.CodeInvalid, Message: "service " + inc.Service + " has no scenario " + req.Scenario}
		}
	}
	if err := s.store.SetDriftSchedule(r.Context(), inc.Name, &store.DriftSchedule{Scenario: req.Scenario, Every: time.Duration(req.Every)}); err != nil {
		return err
	}
	return s.writeDrift(w, r)
}

func (s *Server) deleteDriftSchedule(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if _, err := s.incarnation(r); err != nil {
		return err
	}
	if err := s.store.SetDriftSchedule(r.Context(), r.PathValue("name"), nil); err != nil {
		return err
	}
	return s.writeDrift(w, r)
}

func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if _, err := s.incarnation(r); err != nil {
		return err
	}
	ts, err := s.store.ListTriggers(r.Context(), r.PathValue("name"), r.URL.Query().Get("scenario"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(ts, wireTrigger))
	return nil
}
