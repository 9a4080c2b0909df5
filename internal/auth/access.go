package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Object kinds a permission is asked on. Keeper, service, incarnation and
// coven are also the scopes of grants; the others resolve to scopes
// (a run to its incarnation's, a soul to its covens', a secret to its
// own scope's).
const (
	ObjKeeper      = store.ScopeKeeper
	ObjService     = store.ScopeService
	ObjIncarnation = store.ScopeIncarnation
	ObjCoven       = store.ScopeCoven
	ObjRun         = "run"
	ObjSoul        = "soul"
	ObjSecret      = "secret"
)

// Object is what a permission is asked on: the keeper itself, or one
// named service, incarnation, coven, run, soul or secret.
type Object struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

// Keeper is the keeper as a whole.
func Keeper() Object { return Object{Kind: ObjKeeper} }

// String is "keeper" or "kind:name".
func (o Object) String() string {
	if o.Kind == ObjKeeper || o.Kind == "" {
		return ObjKeeper
	}
	return o.Kind + ":" + o.Name
}

// ParseObject reads "keeper" or "kind:name".
func ParseObject(s string) (Object, error) {
	if s == ObjKeeper {
		return Keeper(), nil
	}
	kind, name, ok := strings.Cut(s, ":")
	switch kind {
	case ObjService, ObjIncarnation, ObjCoven, ObjRun, ObjSoul, ObjSecret:
	default:
		ok = false
	}
	if !ok || name == "" {
		return Object{}, domain.Errorf(domain.CodeInvalid, "object %q: use keeper, service:NAME, incarnation:NAME, coven:NAME, run:APPLY_ID, soul:SID or secret:NAME", s)
	}
	return Object{Kind: kind, Name: name}, nil
}

// Scope is where a grant holds: Kind is keeper, service, incarnation or
// coven; Name is "" for the keeper.
type Scope struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

// String is "keeper" or "kind:name".
func (s Scope) String() string { return Object(s).String() }

// ParseScope reads "keeper", "service:NAME", "incarnation:NAME" or
// "coven:NAME".
func ParseScope(s string) (Scope, error) {
	o, err := ParseObject(s)
	if err == nil {
		switch o.Kind {
		case ObjKeeper, ObjService, ObjIncarnation, ObjCoven:
			return Scope(o), nil
		}
	}
	return Scope{}, domain.Errorf(domain.CodeInvalid, "scope %q: use keeper, service:NAME, incarnation:NAME or coven:NAME", s)
}

// Scopes resolves an object to the scopes whose grants hold on it, the
// keeper first. An object that does not exist (yet) has only the scopes its
// name tells: the handler then answers 404 (or creates it).
func (a *Authority) Scopes(ctx context.Context, o Object) ([]Scope, error) {
	out := []Scope{{Kind: ObjKeeper}}
	switch o.Kind {
	case ObjKeeper, "":
		return out, nil
	case ObjService, ObjCoven:
		return append(out, Scope(o)), nil
	case ObjIncarnation:
		inc, err := a.st.GetIncarnation(ctx, o.Name)
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			return nil, err
		}
		if err == nil {
			out = append(out, Scope{Kind: ObjService, Name: inc.Service})
		}
		return append(out, Scope(o)), nil
	case ObjRun:
		run, err := a.st.GetRun(ctx, o.Name)
		if errors.Is(err, domain.ErrNotFound) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		return a.Scopes(ctx, Object{Kind: ObjIncarnation, Name: run.Incarnation})
	case ObjSoul:
		soul, err := a.st.GetSoul(ctx, o.Name)
		if errors.Is(err, domain.ErrNotFound) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		for _, c := range soul.Covens {
			out = append(out, Scope{Kind: ObjCoven, Name: c})
		}
		return out, nil
	case ObjSecret:
		sec, err := a.st.GetSecret(ctx, o.Name)
		if errors.Is(err, domain.ErrNotFound) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if sec.ScopeKind != "" && sec.ScopeKind != ObjKeeper {
			out = append(out, Scope{Kind: sec.ScopeKind, Name: sec.Scope})
		}
		return out, nil
	}
	return nil, domain.Errorf(domain.CodeInvalid, "unknown object kind %q", o.Kind)
}

// Access is what one Archon may do: its grants (own and its teams') with
// their roles' permissions, loaded once. Lists use it to keep only what the
// caller may see without a query per item.
type Access struct {
	ArchonID string
	grants   []heldGrant
	via      *Access // the delegate's (the Checker's) own access, which bounds this one
}

type heldGrant struct {
	store.Grant
	perms []Permission
}

// Access loads p's grants (and, when p acts through the Checker, the
// Checker's, which bound them).
func (a *Authority) Access(ctx context.Context, p Principal) (*Access, error) {
	acc, err := a.access(ctx, p.ArchonID)
	if err != nil {
		return nil, err
	}
	if p.Via != "" && p.Via != p.ArchonID {
		if acc.via, err = a.access(ctx, p.Via); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func (a *Authority) access(ctx context.Context, archonID string) (*Access, error) {
	gs, err := a.st.ArchonGrants(ctx, archonID)
	if err != nil {
		return nil, err
	}
	acc := &Access{ArchonID: archonID}
	custom := map[string][]Permission{}
	for _, g := range gs {
		perms, ok := BuiltinRole(g.Role)
		if !ok {
			if perms, ok = custom[g.Role]; !ok {
				r, err := a.st.GetAccessRole(ctx, g.Role)
				if err != nil && !errors.Is(err, domain.ErrNotFound) {
					return nil, err
				}
				for _, s := range r.Permissions {
					perms = append(perms, Permission(s))
				}
				custom[g.Role] = perms
			}
		}
		acc.grants = append(acc.grants, heldGrant{Grant: g, perms: perms})
	}
	return acc, nil
}

// grant returns the first grant that gives perm on one of scopes.
func (acc *Access) grant(perm Permission, scopes []Scope) (store.Grant, bool) {
	for _, g := range acc.grants {
		if !slices.Contains(g.perms, perm) {
			continue
		}
		for _, s := range scopes {
			if g.ScopeKind == s.Kind && (s.Kind == ObjKeeper || g.Scope == s.Name) {
				return g.Grant, true
			}
		}
	}
	return store.Grant{}, false
}

// Allows reports whether perm holds on an object in scopes.
func (acc *Access) Allows(perm Permission, scopes ...Scope) bool {
	if perm == PermAuthenticated {
		return true
	}
	_, ok := acc.grant(perm, scopes)
	if ok && acc.via != nil {
		_, ok = acc.via.grant(perm, scopes)
	}
	return ok
}

// Anywhere reports whether perm holds on at least one scope: a list of
// things that need it is refused to an Archon that holds it nowhere.
func (acc *Access) Anywhere(perm Permission) bool {
	for _, g := range acc.grants {
		if slices.Contains(g.perms, perm) {
			return acc.via == nil || acc.via.Anywhere(perm)
		}
	}
	return false
}

// AllowsKeeper reports whether perm holds on the whole keeper.
func (acc *Access) AllowsKeeper(perm Permission) bool {
	return acc.Allows(perm, Scope{Kind: ObjKeeper})
}

// ScopesWith lists the scopes of kind on which perm holds by a grant on
// exactly that scope (not through the keeper): the services, incarnations
// or covens a scoped Archon may act on.
func (acc *Access) ScopesWith(perm Permission, kind string) []string {
	var out []string
	for _, g := range acc.grants {
		if g.ScopeKind == kind && slices.Contains(g.perms, perm) && !slices.Contains(out, g.Scope) {
			if acc.via == nil || acc.via.Allows(perm, Scope{Kind: ObjKeeper}, Scope{Kind: kind, Name: g.Scope}) {
				out = append(out, g.Scope)
			}
		}
	}
	slices.Sort(out)
	return out
}

// IncarnationScopes are the scopes of an incarnation of a service.
func IncarnationScopes(service, incarnation string) []Scope {
	return []Scope{{Kind: ObjKeeper}, {Kind: ObjService, Name: service}, {Kind: ObjIncarnation, Name: incarnation}}
}

// SoulScopes are the scopes of a soul carrying covens.
func SoulScopes(covens []string) []Scope {
	out := []Scope{{Kind: ObjKeeper}}
	for _, c := range covens {
		out = append(out, Scope{Kind: ObjCoven, Name: c})
	}
	return out
}

// Decision is the authorizer's answer with its reasons, for the API's 403,
// the audit log and `soulctl access check`.
type Decision struct {
	Allowed    bool       `json:"allowed"`
	ArchonID   string     `json:"archon_id"`
	Permission Permission `json:"permission"`
	Objects    []Object   `json:"objects"`
	// Scopes are the scopes of the object that was refused (or the last
	// one allowed): a grant on one of them would count.
	Scopes []Scope `json:"scopes"`
	// Grants are the grants that allowed, one per object.
	Grants []store.Grant `json:"grants,omitempty"`
	// Refused is the object on which the permission does not hold.
	Refused *Object `json:"refused,omitempty"`
	// Reason says, in a sentence, why.
	Reason string `json:"reason"`
}

// Decide is the one authorizer (issue 34): may p do perm on every one of
// objs? An empty objs means the keeper.
func (a *Authority) Decide(ctx context.Context, p Principal, perm Permission, objs ...Object) (Decision, error) {
	if len(objs) == 0 {
		objs = []Object{Keeper()}
	}
	d := Decision{ArchonID: p.ArchonID, Permission: perm, Objects: objs}
	if perm == PermAuthenticated {
		d.Allowed, d.Reason = true, "any authenticated Archon may"
		return d, nil
	}
	acc, err := a.Access(ctx, p)
	if err != nil {
		return d, err
	}
	for _, o := range objs {
		scopes, err := a.Scopes(ctx, o)
		if err != nil {
			return d, err
		}
		d.Scopes = scopes
		g, ok := acc.grant(perm, scopes)
		if !ok {
			d.Refused = &o
			d.Reason = fmt.Sprintf("no grant of Archon %s or its teams gives %q on %s (a grant on %s would)", p.ArchonID, perm, o, scopeList(scopes))
			return d, nil
		}
		if acc.via != nil {
			if _, ok := acc.via.grant(perm, scopes); !ok {
				d.Refused = &o
				d.Reason = fmt.Sprintf("Archon %s may, but the Checker's Archon %s, through which it acts, may not %q on %s", p.ArchonID, p.Via, perm, o)
				return d, nil
			}
		}
		d.Grants = append(d.Grants, g)
	}
	d.Allowed = true
	var why []string
	for _, g := range d.Grants {
		why = append(why, describeGrant(g))
	}
	d.Reason = "allowed by " + strings.Join(why, "; ")
	return d, nil
}

// DecideList is the decision of a list route that answers only the items
// p may see: refused only when perm holds on no scope at all.
func (a *Authority) DecideList(ctx context.Context, p Principal, perm Permission) (Decision, error) {
	d := Decision{ArchonID: p.ArchonID, Permission: perm, Objects: []Object{Keeper()}}
	acc, err := a.Access(ctx, p)
	if err != nil {
		return d, err
	}
	if acc.Anywhere(perm) {
		d.Allowed, d.Reason = true, "the list shows only what the Archon's grants give "+string(perm)+" on"
		return d, nil
	}
	k := Keeper()
	d.Refused, d.Scopes = &k, []Scope{{Kind: ObjKeeper}}
	d.Reason = fmt.Sprintf("no grant of Archon %s or its teams gives %q on any scope", p.ArchonID, perm)
	return d, nil
}

// Authorize is Decide as an error: nil when allowed, else a 403 naming
// the missing permission and the object.
func (a *Authority) Authorize(ctx context.Context, p Principal, perm Permission, objs ...Object) error {
	d, err := a.Decide(ctx, p, perm, objs...)
	if err != nil {
		return err
	}
	return d.Err()
}

// Err is the 403 of a refusal (nil when allowed).
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	obj := Keeper()
	if d.Refused != nil {
		obj = *d.Refused
	}
	return &domain.Error{Code: domain.CodeForbidden,
		Message: fmt.Sprintf("permission %q required on %s: %s", d.Permission, obj, d.Reason),
		Details: map[string]any{"permission": string(d.Permission), "object": obj.String(), "scopes": scopeList(d.Scopes)}}
}

func scopeList(ss []Scope) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return strings.Join(out, ", ")
}

func describeGrant(g store.Grant) string {
	sc := Scope{Kind: g.ScopeKind, Name: g.Scope}
	who := "its own grant"
	if g.SubjectKind == store.SubjectTeam {
		who = "team " + g.Subject
	}
	return fmt.Sprintf("grant %s (%s: role %s on %s)", g.ID, who, g.Role, sc)
}

// May reports whether p may do perm on the objects (the keeper when none),
// for choices that are not refusals (what to show); a store error counts
// as no.
func (a *Authority) May(ctx context.Context, p Principal, perm Permission, objs ...Object) bool {
	d, err := a.Decide(ctx, p, perm, objs...)
	return err == nil && d.Allowed
}
