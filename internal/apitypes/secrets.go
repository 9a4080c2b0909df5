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
}

// SetSecretRequest is the body of PUT /v1/secrets/{name}. The field is
// named so that the audit log masks it by name, refused calls included.
type SetSecretRequest struct {
	Secret string `json:"secret"`
}
