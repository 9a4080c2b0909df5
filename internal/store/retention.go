package store

import "time"

// RunRetention is how long runs keep their per-host results (the keeper's
// runs.keep setting): a finished run's results and notes are pruned once
// it is older than MaxAge or no longer among its incarnation's MaxCount
// newest runs (0 disables either bound). Never pruned: the run record
// itself, history snapshots and the committed state; an incarnation's
// newest run and newest normal (non-check) run, which a resume reads; a
// run a pending onchanges trigger names; a run an unfinished resume
// resumes.
type RunRetention struct {
	MaxAge   time.Duration
	MaxCount int
}

// Enabled reports whether anything is ever pruned.
func (k RunRetention) Enabled() bool { return k.MaxAge > 0 || k.MaxCount > 0 }

// PruneReport says what one PruneResults call deleted.
type PruneReport struct {
	Runs    int `json:"runs"`    // runs whose per-host results were pruned
	Results int `json:"results"` // per-host result rows deleted
	Texts   int `json:"texts"`   // stored msg/data values no result refers to any more
}
