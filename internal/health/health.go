// Package health is the monitoring of SPEC §14.1 shared by the soul and the
// Keeper: the wire types of checks and their outcomes, the Nagios plugin
// convention, the soul-side scheduler and the Keeper-side tracker.
package health

import (
	"time"
)

// Statuses of a check. Stale is never reported by a soul: the Keeper shows
// it when a host stopped reporting.
const (
	OK       = "OK"
	Warning  = "WARNING"
	Critical = "CRITICAL"
	Unknown  = "UNKNOWN"
	Stale    = "stale"
)

// Statuses lists the statuses in display order (worst last but stale).
var Statuses = []string{OK, Warning, Critical, Unknown, Stale}

// Severity orders statuses for "anything not OK first" displays.
func Severity(status string) int {
	switch status {
	case OK:
		return 0
	case Warning:
		return 2
	case Critical:
		return 4
	case Unknown:
		return 3
	case Stale:
		return 1
	}
	return 3
}

// Check is one health check as a soul runs it: the Keeper renders the
// params for the host before sending it.
type Check struct {
	Incarnation string         `json:"incarnation"`
	Name        string         `json:"name"`
	Module      string         `json:"module"`
	Params      map[string]any `json:"params,omitempty"`
	Every       time.Duration  `json:"every"`
	Timeout     time.Duration  `json:"timeout"`
	AfterRuns   bool           `json:"after_runs,omitempty"`
}

// ID identifies a check on a host: incarnation/name.
func (c Check) ID() string { return c.Incarnation + "/" + c.Name }

// Outcome is the state of one check on the soul that ran it.
type Outcome struct {
	Incarnation string             `json:"incarnation"`
	Check       string             `json:"check"`
	Status      string             `json:"status"`
	Message     string             `json:"message"`
	Perfdata    map[string]float64 `json:"perfdata,omitempty"`
	// Since is when Status began; CheckedAt when the check last ran.
	Since     time.Time `json:"since"`
	CheckedAt time.Time `json:"checked_at"`
	// Flaps counts transitions the soul held back (flapping).
	Flaps int64 `json:"flaps,omitempty"`
	// Previous is the status before this change (changes only; "" for the
	// first outcome).
	Previous string `json:"previous,omitempty"`
	// Streak counts the consecutive results with Status, this one
	// included. A soul reports the change (streak 1) and each further
	// result up to MaxReportedStreak, so rules can ask for "CRITICAL twice
	// in a row" (SPEC §17) without a report per check run.
	Streak int `json:"streak,omitempty"`
}

// MaxReportedStreak is the longest streak a soul reports result by result.
const MaxReportedStreak = 3

// ID identifies the outcome's check: incarnation/check.
func (o Outcome) ID() string { return o.Incarnation + "/" + o.Check }

// Report is what a soul sends: changes at once, and periodically a summary
// of every current outcome (which also says "still alive, still the same").
type Report struct {
	Changes []Outcome `json:"changes,omitempty"`
	Summary []Outcome `json:"summary,omitempty"`
	// IsSummary marks a summary report (an empty summary means: no checks).
	IsSummary bool `json:"is_summary,omitempty"`
	// RunID answers an after-run request: Changes then hold the fresh
	// outcome of every after_runs check of the run's incarnation.
	RunID string `json:"run_id,omitempty"`
}

// Assignment is what the Keeper sends a soul: its whole set of checks
// (replacing the previous one), or, with RunID set, a request to run the
// after_runs checks of Incarnation now.
type Assignment struct {
	Checks      []Check `json:"checks"`
	RunID       string  `json:"run_id,omitempty"`
	Incarnation string  `json:"incarnation,omitempty"`
}
