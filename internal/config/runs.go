package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Runs configures what the keeper keeps of finished runs.
type Runs struct {
	Keep RunsKeep `yaml:"keep"`
	// MaxLoopItems bounds the items of one task's loop: (SPEC §17;
	// dsl.DefaultMaxLoopItems when 0). A literal list over the default is
	// refused at validation; a computed one fails the task at run time.
	MaxLoopItems int `yaml:"max_loop_items"`
}

// RunsKeep is runs.keep, the retention of per-host results: a finished
// run's results are pruned once it is older than Age or not among its
// incarnation's Count newest runs (0 disables either bound; both 0 keeps
// everything). The run record, its history entry (counts), the committed
// state and whatever a pending trigger or a resume needs are never
// pruned by these bounds; Records bounds them in turn. The keeper prunes
// at start and every Interval.
type RunsKeep struct {
	Age      Duration `yaml:"age"`
	Count    int      `yaml:"count"`
	Interval Duration `yaml:"interval"`
	// Records is runs.keep.records, the retention of the run records and
	// history entries themselves (store.RunRetention says what is never
	// deleted: the committed state's history entry and the runs a resume,
	// a pending trigger or a kept history entry needs).
	Records RecordsKeep `yaml:"records"`
}

// RecordsKeep is runs.keep.records: a run record or history entry older
// than Age or not among its incarnation's Count newest is deleted (0
// disables either bound).
type RecordsKeep struct {
	Age   Duration `yaml:"age"`
	Count int      `yaml:"count"`
}

// DefaultRunsKeep keeps results 30 days and of at most 1,000 runs per
// incarnation, run records and history entries a year and at most 10,000
// per incarnation, pruned every 10 minutes.
func DefaultRunsKeep() RunsKeep {
	return RunsKeep{Age: Duration(30 * 24 * time.Hour), Count: 1000, Interval: Duration(10 * time.Minute),
		Records: RecordsKeep{Age: Duration(365 * 24 * time.Hour), Count: 10000}}
}

// Retention is the store's form of the setting.
func (k RunsKeep) Retention() store.RunRetention {
	return store.RunRetention{MaxAge: k.Age.D(), MaxCount: k.Count,
		RecordMaxAge: k.Records.Age.D(), RecordMaxCount: k.Records.Count}
}

func (k RunsKeep) validate() error {
	var errs []error
	if k.Age < 0 {
		errs = append(errs, errors.New("runs.keep.age must not be negative (0 keeps runs of any age)"))
	}
	if k.Count < 0 {
		errs = append(errs, errors.New("runs.keep.count must not be negative (0 keeps any number of runs)"))
	}
	if k.Records.Age < 0 {
		errs = append(errs, errors.New("runs.keep.records.age must not be negative (0 keeps run records of any age)"))
	}
	if k.Records.Count < 0 {
		errs = append(errs, errors.New("runs.keep.records.count must not be negative (0 keeps any number of run records)"))
	}
	if k.Interval < Duration(time.Second) {
		errs = append(errs, fmt.Errorf("runs.keep.interval must be at least 1s, not %s", k.Interval))
	}
	return errors.Join(errs...)
}
