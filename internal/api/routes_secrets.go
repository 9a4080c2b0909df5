package api

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesSecrets) }

// routesSecrets serves the Keeper's secret store (SPEC §10.5). No route
// returns a value: admins set and delete, operators list (and use the
// secrets in runs through secret("name")), viewers see nothing.
func (s *Server) routesSecrets(rt *Router) {
	if s.cfg.Secrets == nil {
		return
	}
	rt.Handle("GET /v1/secrets", listedBy(auth.PermReadSecrets), s.listSecrets)
	rt.Handle("PUT /v1/secrets/{name}", s.secretNeed(), s.setSecret)
	rt.Handle("DELETE /v1/secrets/{name}", onPath(auth.PermManageSecrets, auth.ObjSecret, "name"), s.deleteSecret)
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	list, err := s.cfg.Secrets.List(r.Context())
	if err != nil {
		return err
	}
	acc, err := s.auth.Access(r.Context(), p)
	if err != nil {
		return err
	}
	list = slices.DeleteFunc(list, func(rec store.Secret) bool {
		scopes := []auth.Scope{{Kind: auth.ObjKeeper}}
		if rec.ScopeKind != "" && rec.ScopeKind != auth.ObjKeeper {
			scopes = append(scopes, auth.Scope{Kind: rec.ScopeKind, Name: rec.Scope})
		}
		return !acc.Allows(auth.PermReadSecrets, scopes...)
	})
	used := s.secretUsers(r.Context())
	out := make([]apitypes.Secret, len(list))
	for i, rec := range list {
		out[i] = wireSecret(rec, used[rec.Name])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// defaultSecretRE finds a procedure's default_secret: NAME and
// {{ secret("NAME") }}.
var defaultSecretRE = regexp.MustCompile(`(?:default_secret:\s*["']?|secret\(\s*\\?["'])([A-Za-z][A-Za-z0-9_.-]*)`)

// secretUsers maps each secret name to the scenarios (at their service's
// pinned commit) and procedures that reference it. A service that does not
// open is left out: the list is a guide, not a guarantee.
func (s *Server) secretUsers(ctx context.Context) map[string][]string {
	used := map[string][]string{}
	if s.cfg.Catalog != nil {
		svcs, _ := s.store.ListServices(ctx)
		for _, rec := range svcs {
			svc, err := s.cfg.Catalog.Open(ctx, rec.Name, rec.Commit)
			if err != nil {
				continue
			}
			for _, scn := range slices.Sorted(maps.Keys(svc.Scenarios)) {
				for n := range engine.SecretRefs(svc.Scenarios[scn]) {
					used[n] = append(used[n], "service/"+rec.Name+"/"+scn)
				}
			}
		}
	}
	procs, _ := s.store.ListProcedures(ctx)
	for _, p := range procs {
		for _, m := range defaultSecretRE.FindAllStringSubmatch(p.Source, -1) {
			if !slices.Contains(used[m[1]], "procedure/"+p.Name) {
				used[m[1]] = append(used[m[1]], "procedure/"+p.Name)
			}
		}
	}
	return used
}

func (s *Server) setSecret(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	SetAuditField(r, "secret", auth.Masked)
	var req apitypes.SetSecretRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	owner := p.ArchonID
	if a, err := s.store.GetArchon(r.Context(), p.ArchonID); err == nil {
		owner = a.Name
	}
	if req.Scope != "" {
		sc, err := auth.ParseScope(req.Scope)
		if err != nil {
			return err
		}
		if err := s.cfg.Secrets.SetScoped(r.Context(), name, req.Secret, owner, sc.Kind, sc.Name); err != nil {
			return err
		}
	} else if err := s.cfg.Secrets.Set(r.Context(), name, req.Secret, owner); err != nil {
		return err
	}
	rec, err := s.store.GetSecret(r.Context(), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireSecret(rec, nil))
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.cfg.Secrets.Delete(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
