package api

import (
	"net/http"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
)

func init() { routeGroups = append(routeGroups, (*Server).routesSecrets) }

// routesSecrets serves the Keeper's secret store (SPEC §10.5). No route
// returns a value: admins set and delete, operators list (and use the
// secrets in runs through secret("name")), viewers see nothing.
func (s *Server) routesSecrets(rt *Router) {
	if s.cfg.Secrets == nil {
		return
	}
	rt.Handle("GET /v1/secrets", auth.RoleOperator, s.listSecrets)
	rt.Handle("PUT /v1/secrets/{name}", auth.RoleAdmin, s.setSecret)
	rt.Handle("DELETE /v1/secrets/{name}", auth.RoleAdmin, s.deleteSecret)
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	list, err := s.cfg.Secrets.List(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) setSecret(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	SetAuditField(r, "secret", auth.Masked)
	var req apiclient.SetSecretRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	owner := p.ArchonID
	if a, err := s.store.GetArchon(r.Context(), p.ArchonID); err == nil {
		owner = a.Name
	}
	if err := s.cfg.Secrets.Set(r.Context(), name, req.Secret, owner); err != nil {
		return err
	}
	rec, err := s.store.GetSecret(r.Context(), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.cfg.Secrets.Delete(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
