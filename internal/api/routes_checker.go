package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesChecker) }

// routesChecker serves the Checker: procedures, their tasks and schedules
// (SPEC §10.1, §13). Operators write and run procedures; viewers read.
func (s *Server) routesChecker(rt *Router) {
	if s.cfg.Checker == nil {
		return
	}
	rt.Handle("GET /v1/procedures", onKeeper(auth.PermRead), s.listProcedures)
	rt.Handle("GET /v1/procedures/{name}", onKeeper(auth.PermRead), s.getProcedure)
	rt.Handle("PUT /v1/procedures/{name}", onKeeper(auth.PermManageProcedures), s.putProcedure)
	rt.Handle("DELETE /v1/procedures/{name}", onKeeper(auth.PermManageProcedures), s.deleteProcedure)
	rt.Handle("POST /v1/procedures/{name}/execute", onKeeper(auth.PermExecuteProcedures), s.executeProcedure)
	rt.Handle("GET /v1/tasks", onKeeper(auth.PermRead), s.listCheckerTasks)
	rt.Handle("GET /v1/tasks/{id}", onKeeper(auth.PermRead), s.getCheckerTask)
	rt.Handle("POST /v1/tasks/{id}/cancel", onKeeper(auth.PermExecuteProcedures), s.cancelCheckerTask)
	rt.Handle("GET /v1/schedules", onKeeper(auth.PermRead), s.listSchedules)
	rt.Handle("POST /v1/schedules", onKeeper(auth.PermManageProcedures), s.createSchedule)
	rt.Handle("DELETE /v1/schedules/{id}", onKeeper(auth.PermManageProcedures), s.deleteSchedule)
}

func (s *Server) listProcedures(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ps, err := s.store.ListProcedures(r.Context())
	if err != nil {
		return fmt.Errorf("listing procedures: %w", err)
	}
	page, err := pageSlice(w, r, ps, smallPage, func(x store.Procedure) string { return x.Name })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireProcedure))
	return nil
}

func (s *Server) getProcedure(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	name := r.PathValue("name")
	p, err := s.store.GetProcedure(r.Context(), name)
	if err != nil {
		return fmt.Errorf("procedure %s: %w", name, err)
	}
	writeJSON(w, http.StatusOK, wireProcedure(p))
	return nil
}

func (s *Server) putProcedure(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.PutProcedureRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	if _, err := s.cfg.Checker.PutProcedure(r.Context(), name, req.Source); err != nil {
		return procedureProblems(name, err)
	}
	p, err := s.store.GetProcedure(r.Context(), name)
	if err != nil {
		return fmt.Errorf("procedure %s: %w", name, err)
	}
	writeJSON(w, http.StatusOK, wireProcedure(p))
	return nil
}

// procedureProblems gives a procedure's validation issues the Problem shape
// every validation error of the API has (file:line:col: message).
func procedureProblems(name string, err error) error {
	var ve *checker.ValidationError
	var de *domain.Error
	if !errors.As(err, &ve) || !errors.As(err, &de) {
		return err
	}
	ps := make([]apitypes.Problem, len(ve.Issues))
	for i, is := range ve.Issues {
		ps[i] = apitypes.Problem{File: name, Line: is.Line, Col: is.Col, Message: is.Msg,
			Text: fmt.Sprintf("%s:%d:%d: %s", name, is.Line, is.Col, is.Msg)}
	}
	return &domain.Error{Code: domain.CodeInvalid, Message: de.Message, Details: ps}
}

func (s *Server) deleteProcedure(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	name := r.PathValue("name")
	if err := s.store.DeleteProcedure(r.Context(), name); err != nil {
		return fmt.Errorf("procedure %s: %w", name, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) executeProcedure(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.ExecuteRequest
	if err := decodeOptional(r, &req); err != nil {
		return err
	}
	tasks, err := s.cfg.Checker.Execute(r.Context(), checker.ExecRequest{Procedure: r.PathValue("name"), Vars: req.Vars, OnBehalfOf: s.actsFor(r.Context(), p)})
	if err != nil {
		return err
	}
	out := apitypes.ExecuteResponse{TaskIDs: make([]string, len(tasks)), Tasks: wireList(tasks, wireCheckerTask)}
	for i, t := range tasks {
		out.TaskIDs[i] = t.ID
	}
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

// maxTaskList bounds GET /v1/tasks.
const maxTaskList = 1000

func (s *Server) listCheckerTasks(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTaskList {
			return invalidf("limit must be an integer from 1 to %d", maxTaskList)
		}
		limit = n
	}
	ts, err := s.store.ListCheckerTasks(r.Context(), r.URL.Query().Get("procedure"), limit)
	if err != nil {
		return fmt.Errorf("listing tasks: %w", err)
	}
	writeJSON(w, http.StatusOK, wireList(ts, wireCheckerTask))
	return nil
}

func (s *Server) getCheckerTask(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	id := r.PathValue("id")
	t, err := s.store.GetCheckerTask(r.Context(), id)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	t.Log = nonNil(t.Log)
	writeJSON(w, http.StatusOK, wireCheckerTask(t))
	return nil
}

func (s *Server) cancelCheckerTask(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.cfg.Checker.Cancel(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ss, err := s.store.ListSchedules(r.Context())
	if err != nil {
		return fmt.Errorf("listing schedules: %w", err)
	}
	page, err := pageSlice(w, r, ss, smallPage, func(x store.Schedule) string { return x.ID })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireSchedule))
	return nil
}

// createSchedule adds a schedule owned by the caller: it pauses while the
// caller's Archon is disabled, and its ticks are audited under it.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CreateScheduleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Procedure == "" || req.Cron == "" {
		return invalidf("procedure and cron are required")
	}
	SetAuditTarget(r, req.Procedure)
	sc, err := s.cfg.Checker.AddSchedule(r.Context(), req.Procedure, req.Vars, req.Cron, p.ArchonID)
	if err != nil {
		return err
	}
	AddAuditField(r, "schedule_id", sc.ID)
	if ar, err := s.auth.Archon(r.Context(), p.ArchonID); err == nil {
		sc.Owner = ar.Name
	}
	writeJSON(w, http.StatusCreated, wireSchedule(sc))
	return nil
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	id := r.PathValue("id")
	if err := s.store.DeleteSchedule(r.Context(), id); err != nil {
		return fmt.Errorf("schedule %s: %w", id, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
