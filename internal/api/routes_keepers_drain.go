package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesKeepersDrain) }

// routesKeepersDrain serves POST /v1/keepers/{id}/drain: empty one keeper
// of a fleet before maintenance (SPEC §17, keeper fleet). Any keeper of
// the database takes the request; the keeper named picks it up within a
// second, refuses new souls and asks its souls to move, each leaving once
// its running work finished.
func (s *Server) routesKeepersDrain(rt *Router) {
	rt.Handle("POST /v1/keepers/{id}/drain", onKeeper(auth.PermManageKeeper), s.drainKeeper)
}

func (s *Server) drainKeeper(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	id := r.PathValue("id")
	SetAuditTarget(r, id)
	if _, err := s.store.GetKeeper(r.Context(), id); err != nil {
		return fmt.Errorf("keeper %s: %w", id, err)
	}
	m := store.KeeperMove{KeeperID: id, Drain: true, By: "archon:" + p.ArchonID, RequestedAt: time.Now()}
	if err := s.store.RequestKeeperMove(r.Context(), m); err != nil {
		return fmt.Errorf("draining keeper %s: %w", id, err)
	}
	writeJSON(w, http.StatusAccepted, apitypes.KeeperDrain{KeeperID: id, Drain: true, RequestedAt: m.RequestedAt})
	return nil
}
