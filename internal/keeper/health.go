package keeper

import (
	"context"
	"encoding/json"
	"time"
)

// onRunEnd follows every run of this keeper's engine: the souls' checks are
// recomputed (the run may have changed state, members or the commit), and
// when the service has after_runs checks the members run them now and
// their outcomes are kept with the run (SPEC §14.1).
func (k *Keeper) onRunEnd(incarnation, runID, status string) {
	k.health.Resync()
	go k.rulesRunEnded(incarnation, runID, status)
	k.health.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		hosts := k.health.AfterRun(ctx, incarnation, runID, k.health.AfterRunWait(ctx, incarnation))
		if hosts == nil {
			return
		}
		b, err := json.Marshal(hosts)
		if err != nil {
			return
		}
		if err := k.store.PutRunHealth(ctx, runID, b, time.Now()); err != nil {
			k.log.Warn("recording the health after a run", "apply_id", runID, "err", err)
		}
	})
}
