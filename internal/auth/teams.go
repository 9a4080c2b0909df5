package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// CreateTeam creates an empty team.
func (a *Authority) CreateTeam(ctx context.Context, name, description string) (store.Team, error) {
	if !archonName.MatchString(name) {
		return store.Team{}, domain.Errorf(domain.CodeInvalid,
			"team name %q is invalid: use 1-63 letters, digits, '_', '.', '@' or '-', starting with a letter or digit", name)
	}
	t := store.Team{Name: name, Description: description, Members: []string{}, CreatedAt: a.now().UTC().Truncate(time.Second)}
	if err := a.st.CreateTeam(ctx, t); err != nil {
		if domain.ErrorCode(err) == domain.CodeConflict {
			return store.Team{}, domain.Errorf(domain.CodeConflict, "team %q already exists", name)
		}
		return store.Team{}, err
	}
	return t, nil
}

// ResolveArchon finds an Archon by id or by name.
func (a *Authority) ResolveArchon(ctx context.Context, idOrName string) (store.Archon, error) {
	ar, err := a.st.GetArchon(ctx, idOrName)
	if err == nil || !errors.Is(err, domain.ErrNotFound) {
		return ar, err
	}
	all, err := a.st.ListArchons(ctx)
	if err != nil {
		return store.Archon{}, err
	}
	for _, x := range all {
		if x.Name == idOrName {
			return x, nil
		}
	}
	return store.Archon{}, &domain.Error{Code: domain.CodeNotFound, Message: fmt.Sprintf("no archon with id or name %q", idOrName), Err: domain.ErrNotFound}
}

// ValidRole reports an error unless name is a built-in or a stored custom
// role.
func (a *Authority) ValidRole(ctx context.Context, name string) error {
	if _, ok := BuiltinRole(name); ok {
		return nil
	}
	if _, err := a.st.GetAccessRole(ctx, name); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Errorf(domain.CodeInvalid, "unknown role %q: use admin, operator, auditor, viewer or a custom role (`soulctl roles list`)", name)
		}
		return err
	}
	return nil
}

// PutRole creates or replaces a custom role. A built-in role's name is
// refused.
func (a *Authority) PutRole(ctx context.Context, name, description string, perms []string) (store.AccessRole, error) {
	if _, ok := BuiltinRole(name); ok {
		return store.AccessRole{}, domain.Errorf(domain.CodeConflict, "%s is a built-in role: choose another name", name)
	}
	if !archonName.MatchString(name) {
		return store.AccessRole{}, domain.Errorf(domain.CodeInvalid, "role name %q is invalid: use letters, digits, '_', '.', '@' or '-'", name)
	}
	if len(perms) == 0 {
		return store.AccessRole{}, domain.Errorf(domain.CodeInvalid, "role %s: give at least one permission", name)
	}
	for _, p := range perms {
		if _, err := ParsePermission(p); err != nil {
			return store.AccessRole{}, err
		}
	}
	r := store.AccessRole{Name: name, Description: description, Permissions: perms}
	if err := a.st.PutAccessRole(ctx, r); err != nil {
		return store.AccessRole{}, err
	}
	return a.st.GetAccessRole(ctx, name)
}

// Grant gives a subject (SubjectArchon: an Archon's id or name;
// SubjectTeam: a team's name) a role on a scope.
func (a *Authority) Grant(ctx context.Context, by Principal, subjectKind, subject, role string, scope Scope) (store.Grant, error) {
	switch subjectKind {
	case store.SubjectArchon:
		ar, err := a.ResolveArchon(ctx, subject)
		if err != nil {
			return store.Grant{}, err
		}
		subject = ar.ID
	case store.SubjectTeam:
		if _, err := a.st.GetTeam(ctx, subject); err != nil {
			return store.Grant{}, err
		}
	default:
		return store.Grant{}, domain.Errorf(domain.CodeInvalid, "grant to %q: give an archon or a team", subjectKind)
	}
	if err := a.ValidRole(ctx, role); err != nil {
		return store.Grant{}, err
	}
	if scope.Kind == ObjKeeper {
		scope.Name = ""
	}
	g := store.Grant{ID: uuid.NewString(), SubjectKind: subjectKind, Subject: subject, Role: role,
		ScopeKind: scope.Kind, Scope: scope.Name, CreatedBy: by.ArchonID, CreatedAt: a.now().UTC().Truncate(time.Second)}
	if err := a.st.CreateGrant(ctx, g); err != nil {
		if domain.ErrorCode(err) == domain.CodeConflict {
			return store.Grant{}, domain.Errorf(domain.CodeConflict, "%s %s already has role %s on %s", subjectKind, subject, role, scope)
		}
		return store.Grant{}, err
	}
	return g, nil
}

// Revoke deletes a grant. The last keeper-wide admin grant of an enabled
// Archon cannot be revoked (nobody could give it back).
func (a *Authority) Revoke(ctx context.Context, id string) (store.Grant, error) {
	g, err := a.st.GetGrant(ctx, id)
	if err != nil {
		return g, err
	}
	if g.Role == string(RoleAdmin) && g.ScopeKind == ObjKeeper {
		all, err := a.st.ListGrants(ctx, store.GrantFilter{Role: string(RoleAdmin)})
		if err != nil {
			return g, err
		}
		others := 0
		for _, o := range all {
			if o.ID != g.ID && o.ScopeKind == ObjKeeper && a.enabledSubject(ctx, o) {
				others++
			}
		}
		if others == 0 {
			return g, domain.Errorf(domain.CodeConflict, "grant %s is the last keeper-wide admin grant: give admin on keeper to another Archon first", id)
		}
	}
	return g, a.st.DeleteGrant(ctx, id)
}

// enabledSubject reports whether a grant reaches at least one enabled
// Archon.
func (a *Authority) enabledSubject(ctx context.Context, g store.Grant) bool {
	ids := []string{g.Subject}
	if g.SubjectKind == store.SubjectTeam {
		t, err := a.st.GetTeam(ctx, g.Subject)
		if err != nil {
			return false
		}
		ids = t.Members
	}
	return slices.ContainsFunc(ids, func(id string) bool {
		ar, err := a.st.GetArchon(ctx, id)
		return err == nil && ar.DisabledAt == nil
	})
}
