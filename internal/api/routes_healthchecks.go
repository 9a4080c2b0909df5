package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/healthkeeper"
)

func init() { routeGroups = append(routeGroups, (*Server).routesHealthChecks) }

// routesHealthChecks serves the health checks of incarnations and the
// vital signs of souls (SPEC §14.1).
func (s *Server) routesHealthChecks(rt *Router) {
	rt.Handle("GET /v1/health", onKeeper(auth.PermRead), s.healthOverview)
	rt.Handle("GET /v1/incarnations/{name}/health", onPath(auth.PermRead, auth.ObjIncarnation, "name"), s.incarnationHealth)
	rt.Handle("GET /v1/souls/{sid}/vitals", onPath(auth.PermRead, auth.ObjSoul, "sid"), s.soulVitals)
	rt.Handle("GET /v1/incarnations/{name}/health/events", onPath(auth.PermRead, auth.ObjIncarnation, "name"), s.healthEvents)
}

func (s *Server) staleAfter() time.Duration {
	if s.cfg.HealthStaleAfter > 0 {
		return s.cfg.HealthStaleAfter
	}
	return healthkeeper.DefaultStaleAfter
}

func (s *Server) healthOverview(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	states, err := s.store.ListHealthStates(r.Context(), "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, healthkeeper.Overview(states, time.Now(), s.staleAfter()))
	return nil
}

func (s *Server) incarnationHealth(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	limit := 20
	if v := r.URL.Query().Get("transitions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			return &domain.Error{Code: domain.CodeInvalid, Message: "transitions must be a number from 0 to 1000"}
		}
		limit = n
	}
	states, err := s.store.ListHealthStates(r.Context(), inc.Name)
	if err != nil {
		return err
	}
	trans, err := s.store.ListHealthTransitions(r.Context(), inc.Name, max(limit, 1))
	if err != nil {
		return err
	}
	if limit == 0 {
		trans = nil
	}
	writeJSON(w, http.StatusOK, healthkeeper.View(inc.Name, states, trans, time.Now(), s.staleAfter()))
	return nil
}

func (s *Server) soulVitals(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	sid := r.PathValue("sid")
	if _, err := s.store.GetSoul(r.Context(), sid); err != nil {
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return notFoundf("soul %q does not exist", sid)
		}
		return err
	}
	vs, err := s.store.ListVitals(r.Context(), []string{sid})
	if err != nil {
		return err
	}
	out := apitypes.SoulVitals{SID: sid, Vitals: map[string]any{}}
	if len(vs) == 1 {
		at := vs[0].At
		out.Vitals, out.At = vs[0].Vitals, &at
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// healthEvents streams an incarnation's health transitions on this keeper
// as Server-Sent Events (event name health.transition).
func (s *Server) healthEvents(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	inc, err := s.incarnation(r)
	if err != nil {
		return err
	}
	if s.cfg.Health == nil {
		return &domain.Error{Code: domain.CodeUnavailable, Message: "this keeper does not run health checks"}
	}
	events, stop := s.cfg.Health.Subscribe(inc.Name)
	defer stop()
	ctx := r.Context()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			b, err := json.Marshal(ev)
			if err != nil {
				return nil
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}
