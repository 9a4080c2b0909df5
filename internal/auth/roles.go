package auth

import (
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Role is an Archon's role. Roles are ordered: admin > operator > viewer, and
// a route that needs a role is open to every role at or above it.
//
// The role matrix of the Operator API [decision]:
//
//	viewer    GET only: souls, services, incarnations, runs, procedures,
//	          tasks, schedules, whoami, its own token records.
//	operator  viewer + incarnations (create, run, unlock, members,
//	          delete), run cancel, procedures, procedure execution,
//	          schedules, and its own API tokens (create, revoke).
//	admin     everything: archons (create, disable, enable), tokens of any
//	          archon (list, create, revoke), the audit log,
//	          services (register, update, delete), incarnation upgrade,
//	          souls (accept, reject, covens, delete, rekey) and join tokens —
//	          everything that decides which hosts and which code the fleet
//	          trusts.
//
// Join tokens are admin-only because a join token pre-accepts a host into
// covens, which is the same trust decision as accepting a soul.
type Role string

// The built-in roles. Since teams and scoped grants (issue 34, see
// access.go) a role is a set of permissions; an Archon's stored role is the
// role it was given on the whole keeper when it was created ("none": no
// keeper-wide grant), and the rank below only orders token minting.
const (
	RoleViewer   Role = store.RoleViewer
	RoleOperator Role = store.RoleOperator
	RoleAdmin    Role = store.RoleAdmin
	RoleAuditor  Role = "auditor"
	RoleNone     Role = store.RoleNone
)

// Roles lists the valid roles from least to most privileged.
var Roles = []Role{RoleNone, RoleViewer, RoleAuditor, RoleOperator, RoleAdmin}

func (r Role) rank() int {
	switch r {
	case RoleNone:
		return 0
	case RoleViewer, RoleAuditor:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	default:
		return -1
	}
}

// Valid reports whether r is one of the built-in roles.
func (r Role) Valid() bool { return r.rank() >= 0 }

// Allows reports whether a holder of r may call a route that needs role need.
// An invalid role allows nothing.
func (r Role) Allows(need Role) bool { return r.Valid() && r.rank() >= need.rank() }

// ParseRole validates s as a Role.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", domain.Errorf(domain.CodeInvalid, "unknown role %q: use admin, operator, auditor, viewer or none (custom roles are given by grants)", s)
	}
	return r, nil
}

// Require returns a forbidden error unless p's role allows need.
func Require(p Principal, need Role) error {
	if p.Role.Allows(need) {
		return nil
	}
	return domain.Errorf(domain.CodeForbidden, "role %s may not do this: %s role required", p.Role, need)
}
