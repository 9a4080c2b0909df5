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
	// RecordMaxAge and RecordMaxCount bound the run records and history
	// entries themselves (runs.keep.records), the same way per
	// incarnation (0 disables either bound). History entries go first:
	// beyond the newest RecordMaxCount of an incarnation or older than
	// RecordMaxAge, except its newest entry (the committed state's). Then
	// the finished runs beyond the bounds, except what the results keep
	// too (the newest run, the newest normal run, a pending trigger's
	// run, the run an unfinished resume resumes) and a run a kept history
	// entry names. A deleted run takes its results, notes and health
	// with it.
	RecordMaxAge   time.Duration
	RecordMaxCount int
}

// Enabled reports whether anything is ever pruned.
func (k RunRetention) Enabled() bool { return k.resultsEnabled() || k.recordsEnabled() }

func (k RunRetention) resultsEnabled() bool { return k.MaxAge > 0 || k.MaxCount > 0 }
func (k RunRetention) recordsEnabled() bool { return k.RecordMaxAge > 0 || k.RecordMaxCount > 0 }

// ResultsEnabled reports whether per-host results are ever pruned.
func (k RunRetention) ResultsEnabled() bool { return k.resultsEnabled() }

// RecordsEnabled reports whether run records and history entries are
// ever pruned.
func (k RunRetention) RecordsEnabled() bool { return k.recordsEnabled() }

// PruneReport says what one PruneResults call deleted.
type PruneReport struct {
	Runs    int `json:"runs"`    // runs whose per-host results were pruned
	Results int `json:"results"` // per-host result rows deleted
	Texts   int `json:"texts"`   // stored msg/data values no result refers to any more
	Records int `json:"records"` // run records deleted (runs.keep.records)
	History int `json:"history"` // history entries deleted (runs.keep.records)
}
