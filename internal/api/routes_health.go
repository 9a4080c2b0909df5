package api

import (
	"context"
	_ "embed"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/domain"
)

// openAPI is the OpenAPI 3 document of the Operator API. It is hand-written
// in one file; every route registered through the Router must appear in it
// (TestOpenAPICoversRoutes).
//
//go:embed openapi.json
var openAPI []byte

func init() { routeGroups = append(routeGroups, (*Server).routesHealth) }

// routesHealth serves the public, unauthenticated endpoints: liveness,
// readiness, metrics and the OpenAPI document. None reveals fleet data.
func (s *Server) routesHealth(rt *Router) {
	rt.Public("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, apiclient.Health{Status: "ok"})
	}))
	rt.Public("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.ping(ctx); err != nil {
			s.writeError(w, r, &domain.Error{Code: domain.CodeUnavailable, Message: "the store is unreachable", Err: err})
			return
		}
		writeJSON(w, http.StatusOK, apiclient.Health{Status: "ready"})
	}))
	rt.Public("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	rt.Public("GET /v1/openapi.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	}))
}
