package api

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// openAPI is the OpenAPI 3 document of the Operator API. It is hand-written
// in one file; every route registered through the Router must appear in it
// (TestOpenAPICoversRoutes).
//
//go:embed openapi.json
var openAPI []byte

func init() { routeGroups = append(routeGroups, (*Server).routesHealth) }

// Readiness write probe (audit L11): a store that answers reads but cannot
// write (a full or read-only disk, an immutable file, a read-only replica)
// fails every mutating call, so /readyz writes one small settings row too.
// The outcome is kept for writeProbeTTL, so load balancers polling /readyz
// cost at most one write per keeper every few seconds.
const (
	writeProbeSetting = "keeper.readyz_probe"
	writeProbeTTL     = 5 * time.Second
	// writeProbeTimeout is how long /readyz waits for the write: a write
	// stuck longer (waiting for a lock, a hung disk) counts as failed.
	writeProbeTimeout = 2 * time.Second
	// writeProbeMax bounds the probe's write itself, which goes on after
	// /readyz answered.
	writeProbeMax = 30 * time.Second
)

// writeProbe caches the last write probe's outcome.
type writeProbe struct {
	mu      sync.Mutex
	at      time.Time     // when err was decided
	err     error         // the last probe's outcome
	running chan struct{} // closed when the probe in flight ends; nil if none
}

// canWrite returns the outcome of a write to st, probing again when the
// last outcome is older than writeProbeTTL. One probe runs at a time;
// callers wait for it at most writeProbeTimeout.
func (p *writeProbe) canWrite(ctx context.Context, st store.Store) error {
	p.mu.Lock()
	if !p.at.IsZero() && time.Since(p.at) < writeProbeTTL {
		defer p.mu.Unlock()
		return p.err
	}
	done := p.running
	if done == nil {
		done = make(chan struct{})
		p.running = done
		// Not the request's context: a client hanging up must not be
		// cached as a failed write.
		go func() {
			defer close(done)
			pctx, cancel := context.WithTimeout(context.Background(), writeProbeMax)
			err := st.PutSetting(pctx, writeProbeSetting, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
			cancel()
			p.mu.Lock()
			p.err, p.at, p.running = err, time.Now(), nil
			p.mu.Unlock()
		}()
	}
	p.mu.Unlock()
	t := time.NewTimer(writeProbeTimeout)
	defer t.Stop()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	case <-t.C:
		return fmt.Errorf("a write to the store did not finish within %s", writeProbeTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// routesHealth serves the public, unauthenticated endpoints: liveness,
// readiness, metrics and the OpenAPI document. None reveals fleet data.
func (s *Server) routesHealth(rt *Router) {
	rt.Public("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, apitypes.Health{Status: "ok"})
	}))
	rt.Public("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.ping(ctx); err != nil {
			s.writeError(w, r, &domain.Error{Code: domain.CodeUnavailable, Message: "the store is unreachable", Err: err})
			return
		}
		if s.cfg.StoreIntegrity != nil {
			if err := s.cfg.StoreIntegrity(); err != nil {
				s.writeError(w, r, &domain.Error{Code: domain.CodeUnavailable, Message: "the store failed its integrity check: restore it from a backup", Err: err})
				return
			}
		}
		if err := s.probe.canWrite(r.Context(), s.store); err != nil {
			s.writeError(w, r, &domain.Error{Code: domain.CodeUnavailable, Message: "the store cannot write", Err: err})
			return
		}
		writeJSON(w, http.StatusOK, apitypes.Health{Status: "ready"})
	}))
	rt.Public("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	rt.Public("GET /v1/openapi.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	}))
}
