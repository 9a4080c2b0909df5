package api

import (
	"fmt"
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
)

func init() { routeGroups = append(routeGroups, (*Server).routesKeepers) }

// routesKeepers serves GET /v1/keepers: the keepers on the database, their
// heartbeats, which one leads and how many souls each holds (SPEC §10.4).
func (s *Server) routesKeepers(rt *Router) {
	rt.Handle("GET /v1/keepers", onKeeper(auth.PermRead), s.listKeepers)
}

func (s *Server) listKeepers(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ks, err := s.store.ListKeepers(r.Context())
	if err != nil {
		return fmt.Errorf("listing keepers: %w", err)
	}
	leader := ""
	if s.cfg.Leader != nil {
		if leader, err = s.cfg.Leader(r.Context()); err != nil {
			leader = "" // leadership is moving: nobody is shown leading
		}
	}
	souls, err := s.store.CountSoulsByKeeper(r.Context())
	if err != nil {
		return fmt.Errorf("counting souls by keeper: %w", err)
	}
	out := make([]apitypes.KeeperInfo, len(ks))
	for i, k := range ks {
		out[i] = apitypes.KeeperInfo{ID: k.ID, Address: k.Address, Version: k.Version, StartedAt: k.StartedAt,
			HeartbeatAt: k.HeartbeatAt, Leader: k.ID == leader, Self: k.ID == s.cfg.KeeperID, Souls: souls[k.ID]}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
