package apitypes

import "time"

// RunDetail is GET /v1/runs/{apply_id}: the run and its tasks × hosts
// results in task order.
type RunDetail struct {
	Run
	// Tasks holds every task of the run, each with the results of one
	// page of hosts (GET /v1/runs/{apply_id}?limit=&after=: by SID, 100
	// hosts by default, at most 1,000) and its counts over all hosts.
	Tasks []RunTask `json:"tasks"`
	// Hosts is how many hosts reported results in the run; Next is the
	// after= of the next page of hosts ("" on the last).
	Hosts int    `json:"hosts"`
	Next  string `json:"next,omitempty"`
	// Health is the health after the run when the service has after_runs
	// checks (SPEC §14.1): per host, the outcomes of those checks.
	Health []RunHealthHost `json:"health,omitempty"`
	// Rule is the rule whose firing started the run (SPEC §17), if any.
	Rule string `json:"rule,omitempty"`
}

// RunTask is one task of a run with its per-host results, by SID.
type RunTask struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Hosts []RunHost `json:"hosts"`
	// Note says why a task that targeted no host (empty Hosts) did (SPEC
	// §6): "on: [db] matched no member of this incarnation", "where: was
	// false on every host".
	Note string `json:"note,omitempty"`
	// Counts sums the task's results over all the run's hosts, not only
	// the page's (nil for a task that targeted no host).
	Counts *RunTaskCounts `json:"counts,omitempty"`
}

// RunTaskCounts sums one task's results over all the hosts of a run.
type RunTaskCounts struct {
	Hosts    int            `json:"hosts"`
	Changed  int            `json:"changed"`
	Statuses map[string]int `json:"statuses"`
}

// RunHost is one host's result of a task. Stdout and stderr are capped by
// the Keeper (Data["truncated"] names what was cut); secrets are ****.
type RunHost struct {
	SID        string         `json:"sid"`
	Wave       int            `json:"wave"`
	Status     string         `json:"status"`
	Changed    bool           `json:"changed"`
	RC         int            `json:"rc"`
	Stdout     string         `json:"stdout"`
	Stderr     string         `json:"stderr"`
	Msg        string         `json:"msg,omitempty"`
	Diff       string         `json:"diff,omitempty"`
	DurationMS int64          `json:"duration_ms"`
	Data       map[string]any `json:"data,omitempty"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
}

// RunEvent is one Server-Sent Event of GET /v1/runs/{apply_id}/events
// (the SSE event name is Type): run (started), task (Path, Task, Hosts: its
// target), wave (Path, Wave, Hosts), host (Result: one host's result of a
// task as it is stored; it comes again when failed_when changes it at the
// task's barrier) and done (Status, Error), always the last. A subscriber
// that connects mid-run first gets the events it missed (of a very large
// run, the first few hundred: the rest is in GET /v1/runs/{apply_id}).
type RunEvent struct {
	Type   string      `json:"type"`
	RunID  string      `json:"apply_id"`
	Time   time.Time   `json:"time"`
	Status string      `json:"status,omitempty"`
	Error  string      `json:"error,omitempty"`
	Path   string      `json:"path,omitempty"`
	Task   string      `json:"task,omitempty"`
	Wave   int         `json:"wave,omitempty"`
	Hosts  []string    `json:"hosts,omitempty"`
	Result *HostResult `json:"result,omitempty"`
}

// RunEventDone is the Type of the last event of a run's stream.
const RunEventDone = "done"

// ResumeRequest is the body of POST /v1/runs/{apply_id}/resume (SPEC
// §8.8): the reason is required and audited (the resume unlocks the
// incarnation); Input gives again the values of the run's secret inputs,
// which it stored masked.
type ResumeRequest struct {
	Reason string         `json:"reason"`
	Input  map[string]any `json:"input,omitempty"`
}
