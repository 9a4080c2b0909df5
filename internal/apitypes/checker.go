package apitypes

// PutProcedureRequest is the body of PUT /v1/procedures/{name}: the
// procedure's YAML.
type PutProcedureRequest struct {
	Source string `json:"source"`
}

// ExecuteRequest is the body of POST /v1/procedures/{name}/execute.
// A scalar var given an array fans out: one task per element.
type ExecuteRequest struct {
	Vars map[string]any `json:"vars,omitempty"`
}

// ExecuteResponse lists the tasks an execute started.
type ExecuteResponse struct {
	TaskIDs []string      `json:"task_ids"`
	Tasks   []CheckerTask `json:"tasks"`
}

// CreateScheduleRequest is the body of POST /v1/schedules.
type CreateScheduleRequest struct {
	Procedure string         `json:"procedure"`
	Vars      map[string]any `json:"vars,omitempty"`
	Cron      string         `json:"cron"`
}

// HeaderOnBehalfOf names the Archon a Checker task acts for (the owner of
// the schedule that started it, or the Archon who executed the
// procedure). The Keeper honours it only on requests made with its
// Checker's own token: the call is authorized for, and audited under,
// that Archon (with "via" naming the Checker), and refused when that
// Archon is disabled or gone (audit M4).
const HeaderOnBehalfOf = "Soulstack-On-Behalf-Of"
