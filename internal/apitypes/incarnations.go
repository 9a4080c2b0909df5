package apitypes

// CreateIncarnationRequest is the body of POST /v1/incarnations. The
// members are the accepted souls carrying all Covens, computed once.
type CreateIncarnationRequest struct {
	Name    string         `json:"name"`
	Service string         `json:"service"`
	Covens  []string       `json:"covens"`
	Input   map[string]any `json:"input,omitempty"`
	Essence map[string]any `json:"essence,omitempty"`
}

// Accepted is the 202 answer of a call that starts a run.
type Accepted struct {
	ApplyID string `json:"apply_id"`
}

// StartRunRequest is the body of POST /v1/incarnations/{name}/runs.
type StartRunRequest struct {
	Scenario string         `json:"scenario"`
	Input    map[string]any `json:"input,omitempty"`
	Check    bool           `json:"check,omitempty"`
}

// UnlockRequest is the body of POST /v1/incarnations/{name}/unlock; the
// reason is required and lands in the audit log.
type UnlockRequest struct {
	Reason string `json:"reason"`
}

// UpgradeRequest is the body of POST /v1/incarnations/{name}/upgrade: the
// git ref of the service to pin the incarnation to.
type UpgradeRequest struct {
	Ref string `json:"ref"`
	// Migrate names a scenario of the new commit that runs right after
	// the switch (202 with its apply_id); the incarnation moves to the new
	// commit only when it commits a state that fits the new state_schema.
	// Without it an upgrade whose schema rejects the committed state is
	// refused (422).
	Migrate string `json:"migrate,omitempty"`
}

// MembersRequest is the body of POST and DELETE
// /v1/incarnations/{name}/members.
type MembersRequest struct {
	SIDs []string `json:"sids"`
}
