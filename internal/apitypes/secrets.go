package apitypes

import "time"

// Secret is one entry of the Keeper's secret store as the API shows it:
// never its value (SPEC §10.5). UsedBy lists what references it:
// "service/<name>/<scenario>" (secret("name") at the service's pinned
// commit) and "procedure/<name>" (default_secret).
type Secret struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"` // the Archon that first set it
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	UsedBy    []string  `json:"used_by,omitempty"`
	// Scope says which scenarios may read it: keeper (all),
	// service:NAME or incarnation:NAME.
	Scope string `json:"scope"`
}

// SetSecretRequest is the body of PUT /v1/secrets/{name}. The field is
// named so that the audit log masks it by name, refused calls included.
type SetSecretRequest struct {
	Secret string `json:"secret"`
	// Scope, when given, sets which scenarios may read the secret:
	// keeper, service:NAME or incarnation:NAME (issue 34). Absent: a new
	// secret belongs to the keeper, an existing one keeps its scope.
	Scope string `json:"scope,omitempty"`
}
