package api

import (
	"errors"
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/cloud"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesCloud) }

// routesCloud serves cloud providers, profiles and the instances recorded
// per incarnation (SPEC §10.6). Admins change them; everyone reads, with
// the providers' secrets (env values, sensitive-looking keys) masked —
// for admins too, as env values are stored sealed (N3) — and profiles'
// sensitive-looking keys masked for all but admins.
func (s *Server) routesCloud(rt *Router) {
	rt.Handle("GET /v1/cloud/providers", onKeeper(auth.PermRead), s.listCloudProviders)
	rt.Handle("GET /v1/cloud/providers/{name}", onKeeper(auth.PermRead), s.getCloudProvider)
	rt.Handle("PUT /v1/cloud/providers/{name}", onKeeper(auth.PermManageKeeper), s.putCloudProvider)
	rt.Handle("DELETE /v1/cloud/providers/{name}", onKeeper(auth.PermManageKeeper), s.deleteCloudProvider)
	rt.Handle("GET /v1/cloud/profiles", onKeeper(auth.PermRead), s.listCloudProfiles)
	rt.Handle("GET /v1/cloud/profiles/{name}", onKeeper(auth.PermRead), s.getCloudProfile)
	rt.Handle("PUT /v1/cloud/profiles/{name}", onKeeper(auth.PermManageKeeper), s.putCloudProfile)
	rt.Handle("DELETE /v1/cloud/profiles/{name}", onKeeper(auth.PermManageKeeper), s.deleteCloudProfile)
	rt.Handle("GET /v1/cloud/instances", onKeeper(auth.PermRead), s.listCloudInstances)
}

// showProvider masks a provider's secrets for everyone, admins too: its
// env values are stored sealed (N3) and, like the secret store's values,
// never returned.
func showProvider(p store.CloudProvider, _ auth.Principal) store.CloudProvider {
	return cloud.MaskProvider(p)
}

func showProfile(p store.CloudProfile, full bool) store.CloudProfile {
	if full {
		return p
	}
	return cloud.MaskProfile(p)
}

func (s *Server) listCloudProviders(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	list, err := s.store.ListCloudProviders(r.Context())
	if err != nil {
		return err
	}
	for i := range list {
		list[i] = showProvider(list[i], p)
	}
	writeJSON(w, http.StatusOK, wireList(list, wireCloudProvider))
	return nil
}

func (s *Server) getCloudProvider(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	prov, err := s.store.GetCloudProvider(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireCloudProvider(showProvider(prov, p)))
	return nil
}

func (s *Server) putCloudProvider(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CloudProviderRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	SetAuditField(r, "config", cloud.MaskConfig(req.Config))
	prov := store.CloudProvider{Name: r.PathValue("name"), Kind: req.Kind, Config: req.Config}
	if prov.Config == nil {
		prov.Config = map[string]any{}
	}
	if err := cloud.ValidateProvider(prov); err != nil {
		return invalidf("%v", err)
	}
	// A kind change must keep every profile of the provider valid.
	if profiles, err := s.store.ListCloudProfiles(r.Context()); err == nil {
		for _, pr := range profiles {
			if pr.Provider != prov.Name {
				continue
			}
			if err := cloud.ValidateProfile(pr, prov.Kind); err != nil {
				return invalidf("profile %s of provider %s would no longer be valid: %v", pr.Name, prov.Name, err)
			}
		}
	} else {
		return err
	}
	var old *store.CloudProvider
	if prev, err := s.store.GetCloudProvider(r.Context(), prov.Name); err == nil {
		old = &prev
	} else if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if s.cfg.Secrets == nil {
		return errors.New("sealing cloud provider env: this keeper has no secrets store")
	}
	sealed, err := cloud.SealProvider(prov, old, s.cfg.Secrets)
	if err != nil {
		return invalidf("%v", err)
	}
	if err := s.store.PutCloudProvider(r.Context(), sealed); err != nil {
		return err
	}
	out, err := s.store.GetCloudProvider(r.Context(), prov.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireCloudProvider(showProvider(out, p)))
	return nil
}

func (s *Server) deleteCloudProvider(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.store.DeleteCloudProvider(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listCloudProfiles(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	list, err := s.store.ListCloudProfiles(r.Context())
	if err != nil {
		return err
	}
	for i := range list {
		list[i] = showProfile(list[i], s.auth.May(r.Context(), p, auth.PermManageKeeper))
	}
	writeJSON(w, http.StatusOK, wireList(list, wireCloudProfile))
	return nil
}

func (s *Server) getCloudProfile(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	pr, err := s.store.GetCloudProfile(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireCloudProfile(showProfile(pr, s.auth.May(r.Context(), p, auth.PermManageKeeper))))
	return nil
}

func (s *Server) putCloudProfile(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CloudProfileRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	covens, err := cleanCovens(req.Covens)
	if err != nil {
		return err
	}
	pr := store.CloudProfile{Name: r.PathValue("name"), Provider: req.Provider, Spec: req.Spec, Covens: covens}
	if pr.Spec == nil {
		pr.Spec = map[string]any{}
	}
	if pr.Provider == "" {
		return invalidf("a cloud profile needs a provider")
	}
	prov, err := s.store.GetCloudProvider(r.Context(), pr.Provider)
	if errors.Is(err, domain.ErrNotFound) {
		return invalidf("cloud profile %s names provider %q, which is not registered (soulctl cloud provider list)", pr.Name, pr.Provider)
	} else if err != nil {
		return err
	}
	if err := cloud.ValidateProfile(pr, prov.Kind); err != nil {
		return invalidf("%v", err)
	}
	if err := s.store.PutCloudProfile(r.Context(), pr); err != nil {
		return err
	}
	out, err := s.store.GetCloudProfile(r.Context(), pr.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireCloudProfile(showProfile(out, s.auth.May(r.Context(), p, auth.PermManageKeeper))))
	return nil
}

func (s *Server) deleteCloudProfile(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if err := s.store.DeleteCloudProfile(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listCloudInstances(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	list, err := s.store.ListCloudInstances(r.Context(), r.URL.Query().Get("incarnation"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(list, wireCloudInstance))
	return nil
}

// destroyInstances deletes the cloud instances of an incarnation being
// deleted with ?destroy=true (SPEC §10.6). Without it, an incarnation
// that has instances is not deleted: that would orphan them.
func (s *Server) destroyInstances(r *http.Request, inc store.Incarnation) error {
	destroy := false
	switch v := r.URL.Query().Get("destroy"); v {
	case "", "false":
	case "true":
		destroy = true
	default:
		return invalidf("destroy must be true or false, not %q", v)
	}
	list, err := s.store.ListCloudInstances(r.Context(), inc.Name)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	if !destroy {
		return domain.Errorf(domain.CodeConflict, "incarnation %s has %d cloud instance(s): delete it with ?destroy=true (soulctl incarnation delete --destroy) to delete them too, or remove them with core.cloud.absent first", inc.Name, len(list))
	}
	if inc.ActiveRun != "" {
		return domain.Errorf(domain.CodeConflict, "incarnation %s has an active run (%s): wait for it or cancel it before destroying", inc.Name, inc.ActiveRun)
	}
	if s.cfg.Cloud == nil {
		return domain.Errorf(domain.CodeUnavailable, "this keeper runs no cloud providers: it cannot destroy the instances of %s", inc.Name)
	}
	names, err := s.cfg.Cloud.Destroy(r.Context(), inc.Name)
	AddAuditField(r, "destroyed", names)
	if err != nil {
		// The provider's own failure, with its reason, not a 500.
		return domain.Errorf(domain.CodeUnprocessable, "destroying the cloud instances of %s failed (deleted so far: %v; the incarnation and the remaining records are kept, try again): %v", inc.Name, names, err)
	}
	return nil
}
