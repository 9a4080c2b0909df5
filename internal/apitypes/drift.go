package apitypes

// DriftRequest is the body of POST /v1/incarnations/{name}/drift: the
// scenario to check ("" = create).
type DriftRequest struct {
	Scenario string `json:"scenario,omitempty"`
}

// DriftSchedule is an incarnation's periodic drift check: the body of PUT
// /v1/incarnations/{name}/drift/schedule and part of Drift.
type DriftSchedule struct {
	Scenario string   `json:"scenario,omitempty"`
	Every    Duration `json:"every"`
}

// Drift is GET /v1/incarnations/{name}/drift: the drift schedule (none:
// null) and the last drift report (none yet: null).
type Drift struct {
	Incarnation string         `json:"incarnation"`
	Schedule    *DriftSchedule `json:"schedule"`
	Report      *DriftReport   `json:"report"`
}
