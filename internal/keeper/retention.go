package keeper

import (
	"context"
	"time"
)

// pruner applies runs.keep while this keeper leads: at start and every
// runs.keep.interval, it deletes the per-host results of the runs the
// retention no longer keeps, then the run records and history entries
// runs.keep.records no longer keeps (store.PruneResults).
func (k *Keeper) pruner(ctx context.Context) {
	keep := k.cfg.Runs.Keep
	if !keep.Retention().Enabled() {
		return
	}
	t := time.NewTicker(keep.Interval.D())
	defer t.Stop()
	first := time.After(time.Second) // let the leader lease settle first
	for {
		select {
		case <-ctx.Done():
			return
		case <-first:
		case <-t.C:
		}
		if !k.leader.IsLeader() {
			continue
		}
		start := time.Now()
		rep, err := k.store.PruneResults(ctx, keep.Retention(), start)
		switch {
		case err != nil && ctx.Err() == nil:
			k.log.Warn("pruning run results (runs.keep); retried at the next interval", "err", err)
		case rep.Runs > 0 || rep.Records > 0 || rep.History > 0:
			k.log.Info("pruned runs (runs.keep)", "runs", rep.Runs, "results", rep.Results,
				"run_records", rep.Records, "history_entries", rep.History,
				"took", time.Since(start).Round(time.Millisecond))
		}
	}
}
