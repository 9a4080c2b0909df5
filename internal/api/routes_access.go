package api

import (
	"net/http"
	"slices"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesAccess) }

// routesAccess serves teams, roles, grants and the explanation of a
// decision (issue 34, docs/access.md). Changing who may do what is
// manage_access on the keeper; every change is audited by the Router.
func (s *Server) routesAccess(rt *Router) {
	rt.Handle("GET /v1/teams", onKeeper(auth.PermManageAccess), s.listTeams)
	rt.Handle("POST /v1/teams", onKeeper(auth.PermManageAccess), s.createTeam)
	rt.Handle("GET /v1/teams/{name}", onKeeper(auth.PermManageAccess), s.getTeam)
	rt.Handle("DELETE /v1/teams/{name}", onKeeper(auth.PermManageAccess), s.deleteTeam)
	rt.Handle("POST /v1/teams/{name}/members", onKeeper(auth.PermManageAccess), s.addTeamMember)
	rt.Handle("DELETE /v1/teams/{name}/members/{archon}", onKeeper(auth.PermManageAccess), s.removeTeamMember)
	rt.Handle("GET /v1/roles", anyArchon(), s.listRoles)
	rt.Handle("PUT /v1/roles/{name}", onKeeper(auth.PermManageAccess), s.putRole)
	rt.Handle("DELETE /v1/roles/{name}", onKeeper(auth.PermManageAccess), s.deleteRole)
	rt.Handle("GET /v1/permissions", anyArchon(), s.listPermissions)
	rt.Handle("GET /v1/grants", onKeeper(auth.PermManageAccess), s.listGrants)
	rt.Handle("POST /v1/grants", onKeeper(auth.PermManageAccess), s.createGrant)
	rt.Handle("DELETE /v1/grants/{id}", onKeeper(auth.PermManageAccess), s.deleteGrant)
	rt.Handle("GET /v1/access/check", anyArchon(), s.accessCheck)
}

func wireTeam(t store.Team) apitypes.Team {
	return apitypes.Team{Name: t.Name, Description: t.Description, Members: nonNil(t.Members), CreatedAt: t.CreatedAt}
}

func (s *Server) listTeams(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ts, err := s.store.ListTeams(r.Context())
	if err != nil {
		return err
	}
	page, err := pageSlice(w, r, ts, smallPage, func(t store.Team) string { return t.Name })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireTeam))
	return nil
}

func (s *Server) createTeam(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.CreateTeamRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := s.auth.CreateTeam(r.Context(), req.Name, req.Description)
	if err != nil {
		return err
	}
	SetAuditTarget(r, t.Name)
	writeJSON(w, http.StatusCreated, wireTeam(t))
	return nil
}

func (s *Server) getTeam(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	t, err := s.store.GetTeam(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireTeam(t))
	return nil
}

func (s *Server) deleteTeam(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	name := r.PathValue("name")
	gs, err := s.store.ListGrants(r.Context(), store.GrantFilter{SubjectKind: store.SubjectTeam, Subject: name})
	if err != nil {
		return err
	}
	if err := s.store.DeleteTeam(r.Context(), name); err != nil {
		return err
	}
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	AddAuditField(r, "revoked_grants", ids)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) addTeamMember(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.TeamMemberRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	ar, err := s.auth.ResolveArchon(r.Context(), req.Archon)
	if err != nil {
		return err
	}
	team := r.PathValue("name")
	if err := s.store.AddTeamMember(r.Context(), team, ar.ID); err != nil {
		return err
	}
	SetAuditTarget(r, team+"/"+ar.ID)
	t, err := s.store.GetTeam(r.Context(), team)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireTeam(t))
	return nil
}

func (s *Server) removeTeamMember(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ar, err := s.auth.ResolveArchon(r.Context(), r.PathValue("archon"))
	if err != nil {
		return err
	}
	team := r.PathValue("name")
	if err := s.store.RemoveTeamMember(r.Context(), team, ar.ID); err != nil {
		return err
	}
	SetAuditTarget(r, team+"/"+ar.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listRoles(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var out []apitypes.AccessRole
	for _, name := range auth.BuiltinRoles() {
		perms, _ := auth.BuiltinRole(string(name))
		ps := make([]string, len(perms))
		for i, p := range perms {
			ps[i] = string(p)
		}
		out = append(out, apitypes.AccessRole{Name: string(name), Builtin: true, Permissions: ps})
	}
	custom, err := s.store.ListAccessRoles(r.Context())
	if err != nil {
		return err
	}
	for _, c := range custom {
		out = append(out, apitypes.AccessRole{Name: c.Name, Permissions: c.Permissions, Description: c.Description, UpdatedAt: &c.UpdatedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) putRole(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.PutRoleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	c, err := s.auth.PutRole(r.Context(), r.PathValue("name"), req.Description, req.Permissions)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.AccessRole{Name: c.Name, Permissions: c.Permissions, Description: c.Description, UpdatedAt: &c.UpdatedAt})
	return nil
}

func (s *Server) deleteRole(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	if _, ok := auth.BuiltinRole(r.PathValue("name")); ok {
		return domain.Errorf(domain.CodeConflict, "%s is a built-in role and cannot be deleted", r.PathValue("name"))
	}
	if err := s.store.DeleteAccessRole(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listPermissions(w http.ResponseWriter, _ *http.Request, _ auth.Principal) error {
	out := make([]apitypes.Permission, len(auth.Permissions))
	for i, p := range auth.Permissions {
		out[i] = apitypes.Permission{Name: string(p.Name), Description: p.Description}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// wireGrant converts a grant, naming its Archon when names has it.
func wireGrant(g store.Grant, names map[string]string) apitypes.Grant {
	out := apitypes.Grant{ID: g.ID, SubjectKind: g.SubjectKind, Subject: g.Subject, Role: g.Role,
		Scope: auth.Scope{Kind: g.ScopeKind, Name: g.Scope}.String(), CreatedBy: g.CreatedBy, CreatedAt: g.CreatedAt}
	if g.SubjectKind == store.SubjectArchon {
		out.SubjectName = names[g.Subject]
	} else {
		out.SubjectName = g.Subject
	}
	return out
}

func (s *Server) archonNames(r *http.Request) map[string]string {
	names := map[string]string{}
	if as, err := s.store.ListArchons(r.Context()); err == nil {
		for _, a := range as {
			names[a.ID] = a.Name
		}
	}
	return names
}

// listGrants lists grants (?archon= id or name: the grants it holds, its
// teams' included; ?team=: the team's).
func (s *Server) listGrants(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	q := r.URL.Query()
	var gs []store.Grant
	var err error
	switch {
	case q.Get("archon") != "":
		ar, rerr := s.auth.ResolveArchon(r.Context(), q.Get("archon"))
		if rerr != nil {
			return rerr
		}
		gs, err = s.store.ArchonGrants(r.Context(), ar.ID)
	case q.Get("team") != "":
		gs, err = s.store.ListGrants(r.Context(), store.GrantFilter{SubjectKind: store.SubjectTeam, Subject: q.Get("team")})
	default:
		gs, err = s.store.ListGrants(r.Context(), store.GrantFilter{})
	}
	if err != nil {
		return err
	}
	page, err := pageSlice(w, r, gs, smallPage, func(g store.Grant) string { return g.ID })
	if err != nil {
		return err
	}
	names := s.archonNames(r)
	out := make([]apitypes.Grant, len(page))
	for i, g := range page {
		out[i] = wireGrant(g, names)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createGrant(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.GrantRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	kind, subject := store.SubjectArchon, req.Archon
	switch {
	case req.Archon != "" && req.Team != "":
		return invalidf("give archon or team, not both")
	case req.Team != "":
		kind, subject = store.SubjectTeam, req.Team
	case req.Archon == "":
		return invalidf("give the archon (id or name) or the team the grant is for")
	}
	if req.Scope == "" {
		return invalidf("give the scope: keeper, service:NAME, incarnation:NAME or coven:NAME")
	}
	scope, err := auth.ParseScope(req.Scope)
	if err != nil {
		return err
	}
	g, err := s.auth.Grant(r.Context(), p, kind, subject, req.Role, scope)
	if err != nil {
		return err
	}
	SetAuditTarget(r, g.ID)
	writeJSON(w, http.StatusCreated, wireGrant(g, s.archonNames(r)))
	return nil
}

func (s *Server) deleteGrant(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	g, err := s.auth.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	AddAuditField(r, "grant", map[string]any{"subject_kind": g.SubjectKind, "subject": g.Subject, "role": g.Role,
		"scope": auth.Scope{Kind: g.ScopeKind, Name: g.Scope}.String()})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// accessCheck explains a decision: ?archon= (id or name; the caller when
// absent), ?permission=, ?object= (keeper, kind:name). Explaining another
// Archon's decision needs manage_access.
func (s *Server) accessCheck(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	q := r.URL.Query()
	ar, err := s.auth.ResolveArchon(r.Context(), p.ArchonID)
	if err != nil {
		return err
	}
	if who := q.Get("archon"); who != "" && who != ar.ID && who != ar.Name {
		if err := s.can(r, p, auth.PermManageAccess); err != nil {
			return err
		}
		if ar, err = s.auth.ResolveArchon(r.Context(), who); err != nil {
			return err
		}
	}
	perm, err := auth.ParsePermission(q.Get("permission"))
	if err != nil {
		return err
	}
	obj := auth.Keeper()
	if o := q.Get("object"); o != "" {
		if obj, err = auth.ParseObject(o); err != nil {
			return err
		}
	}
	d, err := s.auth.Decide(r.Context(), auth.Principal{ArchonID: ar.ID}, perm, obj)
	if err != nil {
		return err
	}
	if ar.DisabledAt != nil {
		d.Allowed = false
		d.Reason = "Archon " + ar.Name + " is disabled: every one of its tokens is refused (" + d.Reason + ")"
	}
	held, err := s.store.ArchonGrants(r.Context(), ar.ID)
	if err != nil {
		return err
	}
	names := s.archonNames(r)
	out := apitypes.AccessDecision{Allowed: d.Allowed, ArchonID: ar.ID, Archon: ar.Name, Permission: string(perm),
		Object: obj.String(), Reason: d.Reason, Held: []apitypes.Grant{}}
	for _, sc := range d.Scopes {
		out.Scopes = append(out.Scopes, sc.String())
	}
	for _, g := range d.Grants {
		out.Grants = append(out.Grants, wireGrant(g, names))
	}
	for _, g := range held {
		out.Held = append(out.Held, wireGrant(g, names))
	}
	slices.SortFunc(out.Held, func(a, b apitypes.Grant) int {
		if a.Scope != b.Scope {
			if a.Scope < b.Scope {
				return -1
			}
			return 1
		}
		return 0
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}
