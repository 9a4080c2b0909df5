package api

import (
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesServices) }

// routesServices serves the service catalog. Registering, moving and
// deleting services decides which code the fleet runs: admin only.
func (s *Server) routesServices(rt *Router) {
	if s.cfg.Catalog == nil {
		return
	}
	rt.Handle("POST /v1/services", onBody(auth.PermRegisterService, auth.ObjService, "name"), s.registerService)
	rt.Handle("GET /v1/services", listed(), s.listServices)
	rt.Handle("GET /v1/services/{name}", onPath(auth.PermRead, auth.ObjService, "name"), s.getService)
	rt.Handle("PATCH /v1/services/{name}", onPath(auth.PermRegisterService, auth.ObjService, "name"), s.updateService)
	rt.Handle("DELETE /v1/services/{name}", onPath(auth.PermRegisterService, auth.ObjService, "name"), s.deleteService)
}

func (s *Server) registerService(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.RegisterServiceRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	SetAuditTarget(r, req.Name)
	svc, err := s.cfg.Catalog.Register(r.Context(), req.Name, req.Git, req.Ref)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.serviceWithWarnings(r, svc))
	return nil
}

func (s *Server) listServices(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	ss, err := s.cfg.Catalog.List(r.Context())
	if err != nil {
		return err
	}
	acc, err := s.auth.Access(r.Context(), p)
	if err != nil {
		return err
	}
	if ss, err = s.visibleServices(r.Context(), acc, ss); err != nil {
		return err
	}
	for i := range ss {
		ss[i] = redactService(ss[i])
	}
	page, err := pageSlice(w, r, ss, smallPage, func(x store.Service) string { return x.Name })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireService))
	return nil
}

func (s *Server) getService(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	svc, err := s.cfg.Catalog.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.serviceWithWarnings(r, svc))
	return nil
}

func (s *Server) updateService(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.UpdateServiceRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	svc, err := s.cfg.Catalog.Update(r.Context(), r.PathValue("name"), req.Ref, req.Git)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.serviceWithWarnings(r, svc))
	return nil
}

func (s *Server) deleteService(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.cfg.Catalog.Delete(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// redactService hides a password in the service's git URL: the catalog
// needs it, readers of the API do not.
func redactService(svc store.Service) store.Service {
	svc.Git = auth.RedactURL(svc.Git)
	return svc
}

// serviceWithWarnings is the wire form of svc with the warnings of its
// commit (issue 31: the shell-injection advice of `scenario validate` is
// shown where the Keeper takes the service in, not only offline). The
// commit was just validated (register, update) or is cached; a commit
// that cannot be opened now leaves the warnings out, the call stands.
func (s *Server) serviceWithWarnings(r *http.Request, svc store.Service) apitypes.Service {
	out := wireService(redactService(svc))
	d, err := s.cfg.Catalog.Open(r.Context(), svc.Name, svc.Commit)
	if err != nil {
		s.log.WarnContext(r.Context(), "service warnings unavailable", "service", svc.Name, "commit", svc.Commit, "err", err)
		return out
	}
	if len(d.Warnings) > 0 {
		out.Warnings = catalog.Problems(d.Warnings)
	}
	return out
}
