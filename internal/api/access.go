package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// Need is the authorization decision a route declares (issue 34): the
// permission it needs and the object it needs it on. Router.Handle takes
// one, so a route cannot be registered without its decision, and the route
// × role × scope table test is generated from it.
type Need struct {
	Perm auth.Permission
	// Object is the kind of object the permission is asked on (auth.Obj*;
	// "" for PermAuthenticated routes).
	Object string
	// Listed marks a list route: any Archon may call it and it answers
	// only the items the caller may read (with correct page cursors).
	Listed  bool
	objects func(r *http.Request) ([]auth.Object, error)
	// permFor, when set, picks the permission from the request (a run
	// in check mode needs check_run).
	permFor func(r *http.Request) (auth.Permission, error)
}

// onKeeper needs perm on the whole keeper.
func onKeeper(perm auth.Permission) Need {
	return Need{Perm: perm, Object: auth.ObjKeeper, objects: func(*http.Request) ([]auth.Object, error) {
		return []auth.Object{auth.Keeper()}, nil
	}}
}

// onPath needs perm on the object of kind named by the path wildcard.
func onPath(perm auth.Permission, kind, wildcard string) Need {
	return Need{Perm: perm, Object: kind, objects: func(r *http.Request) ([]auth.Object, error) {
		return []auth.Object{{Kind: kind, Name: r.PathValue(wildcard)}}, nil
	}}
}

// onBody needs perm on the object(s) of kind the JSON body's field names
// (a string, or a list of strings: each one). When the field is absent or
// empty it needs perm on the keeper (a join token without covens, a
// secret without a scope).
func onBody(perm auth.Permission, kind, field string) Need {
	return Need{Perm: perm, Object: kind, objects: func(r *http.Request) ([]auth.Object, error) {
		names, err := bodyField(r, field)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return []auth.Object{auth.Keeper()}, nil
		}
		out := make([]auth.Object, len(names))
		for i, n := range names {
			out[i] = auth.Object{Kind: kind, Name: n}
		}
		return out, nil
	}}
}

// onPathAndBody needs perm on the path's object and on every object the
// body's field names (a soul's new covens).
func onPathAndBody(perm auth.Permission, kind, wildcard, bodyKind, field string) Need {
	path, body := onPath(perm, kind, wildcard), onBody(perm, bodyKind, field)
	return Need{Perm: perm, Object: kind, objects: func(r *http.Request) ([]auth.Object, error) {
		a, err := path.objects(r)
		if err != nil {
			return nil, err
		}
		names, err := bodyField(r, field)
		if err != nil || len(names) == 0 {
			return a, err
		}
		b, err := body.objects(r)
		return append(a, b...), err
	}}
}

// anyArchon is open to every authenticated Archon: the handler answers only
// the caller's own things (whoami, its tokens) or asks the authorizer
// itself.
func anyArchon() Need {
	return Need{Perm: auth.PermAuthenticated, objects: func(*http.Request) ([]auth.Object, error) { return nil, nil }}
}

// listed is anyArchon for a list route that filters by read permission.
func listed() Need {
	n := anyArchon()
	n.Listed = true
	n.Perm = auth.PermRead
	return n
}

// bodyField reads a string or list-of-strings field of the request's JSON
// body, leaving the body for the handler. A body that is not a JSON object
// has no such field (the handler reports the decoding error).
func bodyField(r *http.Request, field string) ([]string, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, invalidf("reading request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil, nil
	}
	raw, ok := obj[field]
	if !ok {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, invalidf("field %s: want a string or a list of strings", field)
	}
	return many, nil
}

// authorize asks the authorizer for a route's decision; a refusal is
// audited (every refusal, reads included) and returned as the 403 that
// names the missing permission.
func (s *Server) authorize(r *http.Request, p auth.Principal, need Need) error {
	if need.Perm == auth.PermAuthenticated {
		return nil
	}
	if need.Listed {
		d, err := s.auth.DecideList(r.Context(), p, need.Perm)
		if err != nil {
			return err
		}
		if !d.Allowed {
			s.auditRefusal(r, p, d)
		}
		return d.Err()
	}
	objs, err := need.objects(r)
	if err != nil {
		return err
	}
	perm := need.Perm
	if need.permFor != nil {
		if perm, err = need.permFor(r); err != nil {
			return err
		}
	}
	d, err := s.auth.Decide(r.Context(), p, perm, objs...)
	if err != nil {
		return err
	}
	if !d.Allowed {
		s.auditRefusal(r, p, d)
	}
	return d.Err()
}

// can asks the authorizer from inside a handler (an action whose object the
// route cannot tell: another Archon's tokens, a rule's scope).
func (s *Server) can(r *http.Request, p auth.Principal, perm auth.Permission, objs ...auth.Object) error {
	d, err := s.auth.Decide(r.Context(), p, perm, objs...)
	if err != nil {
		return err
	}
	if !d.Allowed {
		s.auditRefusal(r, p, d)
	}
	return d.Err()
}

// auditRefusal records a refused decision (issue 34). Mutating calls are
// audited again by the middleware with their status; this entry says
// which permission was missing on what, for reads too.
func (s *Server) auditRefusal(r *http.Request, p auth.Principal, d auth.Decision) {
	target := ""
	if d.Refused != nil {
		target = d.Refused.String()
	}
	sum := map[string]any{"route": r.Pattern, "permission": string(d.Permission), "reason": d.Reason}
	if p.Via != "" {
		sum["via"] = p.Via
	}
	if err := s.auth.Record(r.Context(), p, "access.denied", target, sum); err != nil {
		s.log.ErrorContext(r.Context(), "audit entry lost", "action", "access.denied", "archon", p.ArchonID, "err", err)
	}
}

// listedBy is listed for a list whose items need perm (secret names).
func listedBy(perm auth.Permission) Need {
	n := listed()
	n.Perm = perm
	return n
}

// runNeed is POST …/runs: run on the incarnation, or check_run when the
// body asks for check mode.
func runNeed() Need {
	n := onPath(auth.PermRun, auth.ObjIncarnation, "name")
	n.permFor = func(r *http.Request) (auth.Permission, error) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return "", invalidf("reading request body: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		var req struct {
			Check bool `json:"check"`
		}
		if json.Unmarshal(b, &req) == nil && req.Check {
			return auth.PermCheckRun, nil
		}
		return auth.PermRun, nil
	}
	return n
}

// ruleNeed is pausing or resuming rule scope/name: pause_rules on the
// keeper for Keeper-wide rules ("keeper"), else on the incarnation.
func ruleNeed() Need {
	return Need{Perm: auth.PermPauseRules, Object: auth.ObjIncarnation, objects: func(r *http.Request) ([]auth.Object, error) {
		if sc := r.PathValue("scope"); sc != "keeper" {
			return []auth.Object{{Kind: auth.ObjIncarnation, Name: sc}}, nil
		}
		return []auth.Object{auth.Keeper()}, nil
	}}
}

// acceptNeed is accepting a pending soul (which has no covens yet):
// manage_souls on every coven it is accepted into, or on the keeper
// when none.
func acceptNeed() Need { return onBody(auth.PermManageSouls, auth.ObjCoven, "covens") }

// secretNeed is setting a secret: manage_secrets on the secret as it is
// (when it exists) and on the scope the body gives it (when it gives one);
// a new secret without a scope belongs to the keeper.
func (s *Server) secretNeed() Need {
	return Need{Perm: auth.PermManageSecrets, Object: auth.ObjSecret, objects: func(r *http.Request) ([]auth.Object, error) {
		var out []auth.Object
		name := r.PathValue("name")
		if _, err := s.store.GetSecret(r.Context(), name); err == nil {
			out = append(out, auth.Object{Kind: auth.ObjSecret, Name: name})
		}
		scopes, err := bodyField(r, "scope")
		if err != nil {
			return nil, err
		}
		for _, sc := range scopes {
			o, err := auth.ParseScope(sc)
			if err != nil {
				return nil, err
			}
			out = append(out, auth.Object(o))
		}
		if len(out) == 0 {
			out = []auth.Object{auth.Keeper()}
		}
		return out, nil
	}}
}

// visibleIncarnations filters incarnations to those acc may read.
func visibleIncarnations(acc *auth.Access, incs []store.Incarnation) []store.Incarnation {
	out := incs[:0:0]
	for _, inc := range incs {
		if acc.Allows(auth.PermRead, auth.IncarnationScopes(inc.Service, inc.Name)...) {
			out = append(out, inc)
		}
	}
	return out
}

// runVisibility narrows a run query to the incarnations p may read (no
// narrowing for a keeper-wide reader).
func (s *Server) runVisibility(ctx context.Context, acc *auth.Access, q *store.RunQuery) error {
	if acc.AllowsKeeper(auth.PermRead) {
		return nil
	}
	incs, err := s.store.ListIncarnations(ctx)
	if err != nil {
		return err
	}
	q.Visible = true
	for _, inc := range visibleIncarnations(acc, incs) {
		q.VisibleIncarnations = append(q.VisibleIncarnations, inc.Name)
	}
	return nil
}

// soulVisibility narrows a soul query to the covens p may read.
func soulVisibility(acc *auth.Access, q *store.SoulQuery) {
	if acc.AllowsKeeper(auth.PermRead) {
		return
	}
	q.Visible, q.VisibleCovens = true, acc.ScopesWith(auth.PermRead, auth.ObjCoven)
}

// visibleServices keeps the services p may read: by a grant on the keeper
// or the service, or on one of its incarnations.
func (s *Server) visibleServices(ctx context.Context, acc *auth.Access, ss []store.Service) ([]store.Service, error) {
	if acc.AllowsKeeper(auth.PermRead) {
		return ss, nil
	}
	incs, err := s.store.ListIncarnations(ctx)
	if err != nil {
		return nil, err
	}
	via := map[string]bool{}
	for _, inc := range visibleIncarnations(acc, incs) {
		via[inc.Service] = true
	}
	out := ss[:0:0]
	for _, svc := range ss {
		if via[svc.Name] || acc.Allows(auth.PermRead, auth.Scope{Kind: auth.ObjKeeper}, auth.Scope{Kind: auth.ObjService, Name: svc.Name}) {
			out = append(out, svc)
		}
	}
	return out, nil
}
