package store

import (
	"context"
	"time"
)

// Grant subject kinds.
const (
	SubjectArchon = "archon" // Subject is the Archon's id
	SubjectTeam   = "team"   // Subject is the team's name
)

// Scope kinds of a grant (and of a secret): the whole keeper, a service
// (all its incarnations), an incarnation, or a coven (the souls carrying
// it).
const (
	ScopeKeeper      = "keeper"
	ScopeService     = "service"
	ScopeIncarnation = "incarnation"
	ScopeCoven       = "coven"
)

// Team is a named group of Archons; grants to the team hold for every
// member.
type Team struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Members     []string  `json:"members"` // Archon ids, sorted; never nil on read
	CreatedAt   time.Time `json:"created_at"`
}

// AccessRole is a custom role: a named set of permissions (the built-in
// roles admin, operator, viewer and auditor are not stored).
type AccessRole struct {
	Name        string    `json:"name"`
	Permissions []string  `json:"permissions"` // sorted
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Grant gives a subject (an Archon or a team) a role on a scope. Scope is
// "" for ScopeKeeper, else the service's, incarnation's or coven's name.
type Grant struct {
	ID          string    `json:"id"`
	SubjectKind string    `json:"subject_kind"`
	Subject     string    `json:"subject"`
	Role        string    `json:"role"`
	ScopeKind   string    `json:"scope_kind"`
	Scope       string    `json:"scope,omitempty"`
	CreatedBy   string    `json:"created_by,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// GrantFilter narrows ListGrants; empty fields match everything.
type GrantFilter struct {
	SubjectKind string
	Subject     string
	Role        string
}

// AccessStore persists teams, custom roles and grants (issue 34).
type AccessStore interface {
	// CreateTeam inserts a team (without members); conflict when the name
	// is taken.
	CreateTeam(ctx context.Context, t Team) error
	GetTeam(ctx context.Context, name string) (Team, error)
	ListTeams(ctx context.Context) ([]Team, error) // by name, with members
	// DeleteTeam deletes a team, its memberships and every grant to it.
	DeleteTeam(ctx context.Context, name string) error
	// AddTeamMember adds an Archon to a team (adding twice is no error);
	// not found for an unknown team or Archon.
	AddTeamMember(ctx context.Context, team, archonID string) error
	RemoveTeamMember(ctx context.Context, team, archonID string) error
	// ArchonTeams lists the names of the teams an Archon belongs to.
	ArchonTeams(ctx context.Context, archonID string) ([]string, error)

	// PutAccessRole inserts or replaces a custom role.
	PutAccessRole(ctx context.Context, r AccessRole) error
	GetAccessRole(ctx context.Context, name string) (AccessRole, error)
	ListAccessRoles(ctx context.Context) ([]AccessRole, error) // by name
	// DeleteAccessRole deletes a custom role; conflict while a grant
	// gives it.
	DeleteAccessRole(ctx context.Context, name string) error

	// CreateGrant inserts a grant; conflict when the same subject already
	// has the same role on the same scope.
	CreateGrant(ctx context.Context, g Grant) error
	GetGrant(ctx context.Context, id string) (Grant, error)
	ListGrants(ctx context.Context, f GrantFilter) ([]Grant, error) // by subject, scope, role
	// ArchonGrants lists the grants an Archon holds: its own and its
	// teams'.
	ArchonGrants(ctx context.Context, archonID string) ([]Grant, error)
	DeleteGrant(ctx context.Context, id string) error
}
