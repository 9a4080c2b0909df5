package apitypes

import "time"

// IncarnationHealth is GET /v1/incarnations/{name}/health (SPEC §14.1):
// per check, the hosts by status (stale: the host stopped reporting), and
// the latest transitions.
type IncarnationHealth struct {
	Incarnation string         `json:"incarnation"`
	Counts      map[string]int `json:"counts"`
	Checks      []HealthCheck  `json:"checks"`
	// Transitions are the newest status changes, newest first.
	Transitions []HealthTransition `json:"transitions"`
	// StaleAfter is how long a host may be silent before it shows stale.
	StaleAfter Duration `json:"stale_after"`
}

// HealthCheck is one check of an incarnation with its hosts.
type HealthCheck struct {
	Name   string         `json:"name"`
	Counts map[string]int `json:"counts"`
	Hosts  []HealthHost   `json:"hosts"`
}

// HealthHost is a check's state on one host.
type HealthHost struct {
	SID string `json:"sid"`
	// Status is OK, WARNING, CRITICAL, UNKNOWN or stale; LastStatus is
	// what the host last reported (differs when stale).
	Status     string             `json:"status"`
	LastStatus string             `json:"last_status"`
	Message    string             `json:"message"`
	Perfdata   map[string]float64 `json:"perfdata,omitempty"`
	Since      time.Time          `json:"since"`
	CheckedAt  time.Time          `json:"checked_at"`
	ReportedAt time.Time          `json:"reported_at"`
	Flaps      int64              `json:"flaps,omitempty"`
}

// HealthOverview is GET /v1/health: counts by status per incarnation that
// has health checks, anything not OK first.
type HealthOverview struct {
	Incarnations []IncarnationHealthCounts `json:"incarnations"`
}

// IncarnationHealthCounts is one incarnation's counts by status.
type IncarnationHealthCounts struct {
	Incarnation string         `json:"incarnation"`
	Counts      map[string]int `json:"counts"`
}

// RunHealthHost is one host's after_runs check outcomes after a run;
// Missing says why there are none (not connected, no answer in time).
type RunHealthHost struct {
	SID      string             `json:"sid"`
	Outcomes []RunHealthOutcome `json:"outcomes,omitempty"`
	Missing  string             `json:"missing,omitempty"`
}

// RunHealthOutcome is one check's outcome on a host after a run.
type RunHealthOutcome struct {
	Incarnation string             `json:"incarnation"`
	Check       string             `json:"check"`
	Status      string             `json:"status"`
	Message     string             `json:"message"`
	Perfdata    map[string]float64 `json:"perfdata,omitempty"`
	Since       time.Time          `json:"since"`
	CheckedAt   time.Time          `json:"checked_at"`
}

// HealthEvent is one Server-Sent Event of GET
// /v1/incarnations/{name}/health/events: a check changed status on a host.
type HealthEvent struct {
	Type        string    `json:"type"`
	Incarnation string    `json:"incarnation"`
	Check       string    `json:"check"`
	SID         string    `json:"sid"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Message     string    `json:"message"`
	Time        time.Time `json:"time"`
}

// SoulVitals is GET /v1/souls/{sid}/vitals: the soul's latest vital signs.
type SoulVitals struct {
	SID    string         `json:"sid"`
	Vitals map[string]any `json:"vitals"`
	At     *time.Time     `json:"at,omitempty"`
}

// HealthTransition is one status change of a check on a host.
type HealthTransition struct {
	ID          int64     `json:"id"`
	Incarnation string    `json:"incarnation"`
	Check       string    `json:"check"`
	SID         string    `json:"sid"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Message     string    `json:"message"`
	At          time.Time `json:"at"`
}
