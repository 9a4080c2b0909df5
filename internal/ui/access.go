package ui

import (
	"context"
	"net/http"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// authorizer is the API's authorizer (auth.Authority, which is also the
// UI's Authenticator): the UI shows what the same decisions allow (issue
// 34), and the API refuses the rest anyway.
type authorizer interface {
	Access(ctx context.Context, p auth.Principal) (*auth.Access, error)
	Decide(ctx context.Context, p auth.Principal, perm auth.Permission, objs ...auth.Object) (auth.Decision, error)
}

// access is the request's Archon's access; nil when the UI has no
// authorizer or no signed-in Archon (then nothing is filtered: the API
// still decides every action).
func (u *UI) access(r *http.Request) *auth.Access {
	az, ok := u.cfg.Auth.(authorizer)
	p, signed := auth.FromContext(r.Context())
	if !ok || !signed {
		return nil
	}
	acc, err := az.Access(r.Context(), p)
	if err != nil {
		return nil
	}
	return acc
}

// may reports whether the request's Archon may do perm on obj.
func (u *UI) may(r *http.Request, perm auth.Permission, obj auth.Object) bool {
	az, ok := u.cfg.Auth.(authorizer)
	p, signed := auth.FromContext(r.Context())
	if !ok || !signed {
		return false
	}
	d, err := az.Decide(r.Context(), p, perm, obj)
	return err == nil && d.Allowed
}

// requireRead refuses a page about obj that the Archon may not read, as
// the API does (403 naming the permission).
func (u *UI) requireRead(r *http.Request, obj auth.Object) error {
	az, ok := u.cfg.Auth.(authorizer)
	p, signed := auth.FromContext(r.Context())
	if !ok || !signed {
		return nil
	}
	d, err := az.Decide(r.Context(), p, auth.PermRead, obj)
	if err != nil {
		return err
	}
	return d.Err()
}

// visibleIncarnations keeps what acc may read (all when acc is nil).
func visibleIncarnations(acc *auth.Access, incs []store.Incarnation) []store.Incarnation {
	if acc == nil {
		return incs
	}
	out := incs[:0:0]
	for _, inc := range incs {
		if acc.Allows(auth.PermRead, auth.IncarnationScopes(inc.Service, inc.Name)...) {
			out = append(out, inc)
		}
	}
	return out
}

// runVisibility narrows a run query as GET /v1/runs does.
func runVisibility(acc *auth.Access, incs []store.Incarnation, q *store.RunQuery) {
	if acc == nil || acc.AllowsKeeper(auth.PermRead) {
		return
	}
	q.Visible = true
	for _, inc := range visibleIncarnations(acc, incs) {
		q.VisibleIncarnations = append(q.VisibleIncarnations, inc.Name)
	}
}

// soulVisibility narrows a soul query as GET /v1/souls does.
func soulVisibility(acc *auth.Access, q *store.SoulQuery) {
	if acc == nil || acc.AllowsKeeper(auth.PermRead) {
		return
	}
	q.Visible, q.VisibleCovens = true, acc.ScopesWith(auth.PermRead, auth.ObjCoven)
}

// actionsOn is actionsFor with the buttons of obj: Operator when the
// Archon may run there, Admin when it may manage souls there.
func (u *UI) actionsOn(r *http.Request, obj auth.Object) actions {
	a := u.actionsFor(r)
	if !a.Enabled {
		return a
	}
	if _, ok := u.cfg.Auth.(authorizer); ok {
		a.Operator = u.may(r, auth.PermRun, obj)
		a.Admin = u.may(r, auth.PermManageSouls, obj)
	}
	return a
}

// anywhere reports whether the request's Archon holds perm on some scope.
func (u *UI) anywhere(r *http.Request, perm auth.Permission) bool {
	acc := u.access(r)
	return acc != nil && acc.Anywhere(perm)
}

// mayAnywhere refuses an action whose permission the Archon holds on no
// scope (the API decides on the object).
func (u *UI) mayAnywhere(r *http.Request, p auth.Principal, perm auth.Permission) error {
	az, ok := u.cfg.Auth.(authorizer)
	if !ok {
		return nil
	}
	acc, err := az.Access(r.Context(), p)
	if err != nil {
		return err
	}
	if !acc.Anywhere(perm) {
		return domain.Errorf(domain.CodeForbidden, "permission %q required: no grant of yours gives it on any scope", perm)
	}
	return nil
}
