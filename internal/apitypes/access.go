package apitypes

import "time"

// Team is a named group of Archons (GET /v1/teams).
type Team struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Members     []string  `json:"members"` // Archon ids
	CreatedAt   time.Time `json:"created_at"`
}

// CreateTeamRequest is the body of POST /v1/teams.
type CreateTeamRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// TeamMemberRequest is the body of POST /v1/teams/{name}/members: an
// Archon's id or name.
type TeamMemberRequest struct {
	Archon string `json:"archon"`
}

// AccessRole is a role: a set of permissions (GET /v1/roles).
type AccessRole struct {
	Name        string     `json:"name"`
	Builtin     bool       `json:"builtin"`
	Permissions []string   `json:"permissions"`
	Description string     `json:"description,omitempty"`
	UpdatedAt   *time.Time `json:"updated_at,omitempty"`
}

// PutRoleRequest is the body of PUT /v1/roles/{name}.
type PutRoleRequest struct {
	Permissions []string `json:"permissions"`
	Description string   `json:"description,omitempty"`
}

// Permission is one permission and what it allows.
type Permission struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Grant gives an Archon or a team a role on a scope.
type Grant struct {
	ID          string    `json:"id"`
	SubjectKind string    `json:"subject_kind"` // archon, team
	Subject     string    `json:"subject"`      // archon id, team name
	SubjectName string    `json:"subject_name,omitempty"`
	Role        string    `json:"role"`
	Scope       string    `json:"scope"` // keeper, service:NAME, incarnation:NAME, coven:NAME
	CreatedBy   string    `json:"created_by,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// GrantRequest is the body of POST /v1/grants: exactly one of Archon (id
// or name) and Team.
type GrantRequest struct {
	Archon string `json:"archon,omitempty"`
	Team   string `json:"team,omitempty"`
	Role   string `json:"role"`
	Scope  string `json:"scope"`
}

// AccessDecision is GET /v1/access/check's answer: whether an Archon may
// do a permission on an object, and why.
type AccessDecision struct {
	Allowed    bool     `json:"allowed"`
	ArchonID   string   `json:"archon_id"`
	Archon     string   `json:"archon"`
	Permission string   `json:"permission"`
	Object     string   `json:"object"`
	Scopes     []string `json:"scopes"`
	Grants     []Grant  `json:"grants,omitempty"`
	Reason     string   `json:"reason"`
	// Held lists every grant the Archon holds (own and its teams'), for
	// "why none did".
	Held []Grant `json:"held"`
}
