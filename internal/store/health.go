package store

import (
	"context"
	"time"
)

// HealthState is the current state of one health check on one host of an
// incarnation (SPEC §14.1).
type HealthState struct {
	Incarnation string             `json:"incarnation"`
	Check       string             `json:"check"`
	SID         string             `json:"sid"`
	Status      string             `json:"status"` // OK, WARNING, CRITICAL, UNKNOWN
	Message     string             `json:"message"`
	Perfdata    map[string]float64 `json:"perfdata,omitempty"`
	// Since is when Status began; CheckedAt when the soul last ran the
	// check; ReportedAt when the Keeper last heard of it (change or
	// summary), which tells a stale host.
	Since      time.Time `json:"since"`
	CheckedAt  time.Time `json:"checked_at"`
	ReportedAt time.Time `json:"reported_at"`
	// Flaps counts the transitions that were not kept one by one in the
	// history because the check flapped faster than the rate limit.
	Flaps int64 `json:"flaps,omitempty"`
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

// Vitals are a soul's volatile facts (load, memory, disk, uptime, failed
// units), kept apart from the stable soulprint.
type Vitals struct {
	SID    string         `json:"sid"`
	Vitals map[string]any `json:"vitals"`
	At     time.Time      `json:"at"`
}

// HealthStore persists health states, their transitions and vital signs.
// Writes take batches: the Keeper buffers reports and writes them together.
type HealthStore interface {
	// PutHealthStates upserts states keyed by (incarnation, check, sid);
	// states of incarnations that do not exist (any more) are dropped.
	PutHealthStates(ctx context.Context, states []HealthState) error
	// ListHealthStates lists the states of incarnation ("" = all) by
	// incarnation, check, sid.
	ListHealthStates(ctx context.Context, incarnation string) ([]HealthState, error)
	// RetainHealthStates deletes the incarnation's states whose check is
	// not in checks or whose host is not in sids (a check removed from the
	// repo, a member removed) and returns how many.
	RetainHealthStates(ctx context.Context, incarnation string, checks, sids []string) (int, error)
	// AddHealthTransitions appends transitions (their ID is assigned);
	// those of incarnations that do not exist are dropped.
	AddHealthTransitions(ctx context.Context, ts []HealthTransition) error
	// ListHealthTransitions lists the incarnation's transitions ("" = all),
	// newest first, at most limit (<= 0: 100).
	ListHealthTransitions(ctx context.Context, incarnation string, limit int) ([]HealthTransition, error)
	// PruneHealthTransitions deletes transitions older than before and, per
	// incarnation, all but the newest keep; it returns how many.
	PruneHealthTransitions(ctx context.Context, keep int, before time.Time) (int, error)
	// PutRunHealth keeps the health after a run (JSON: the after_runs
	// checks' outcomes per host), replacing an earlier one; dropped when
	// the run does not exist. GetRunHealth returns it, nil when none.
	PutRunHealth(ctx context.Context, runID string, health []byte, at time.Time) error
	GetRunHealth(ctx context.Context, runID string) ([]byte, error)
	// PutVitals upserts souls' vital signs by SID.
	PutVitals(ctx context.Context, vs []Vitals) error
	// ListVitals lists vital signs of sids (nil = every soul), by SID.
	ListVitals(ctx context.Context, sids []string) ([]Vitals, error)
}
