package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module/core"
	"github.com/soulstack/soulstack/internal/store"
)

// rebootPoll is how often the engine looks for a rebooted soul's return.
const rebootPoll = 250 * time.Millisecond

// awaitReboot completes a core.system.rebooted call: the soul answered
// that the reboot is scheduled, with the boot id it had; the task ends
// only when the soul is connected again and reports another boot id (a
// fresh soulprint comes with every hello), or fails when that takes longer
// than the call's timeout param. A result without previous_boot_id (a
// failure, check mode, a scenario test's stub) is returned as it is.
func (r *runner) awaitReboot(ctx context.Context, sid string, w dispatch.Work, res domain.Result) domain.Result {
	if w.Call == nil || w.Call.Module != core.RebootModule || w.Check || res.Failed || res.Unreachable {
		return res
	}
	prev, _ := res.Data["previous_boot_id"].(string)
	if _, done := res.Data["boot_id"]; prev == "" || done {
		return res
	}
	timeout, err := core.RebootTimeout(w.Call.Params)
	if err != nil {
		res.Failed, res.Msg = true, err.Error()
		return res
	}
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(rebootPoll)
	defer tick.Stop()
	for {
		soul, err := r.e.cfg.Store.GetSoul(ctx, sid)
		if err == nil && soul.Status == store.SoulConnected {
			if now, _ := soul.Soulprint["boot_id"].(string); now != "" && now != prev {
				data := make(map[string]any, len(res.Data)+1)
				for k, v := range res.Data {
					data[k] = v
				}
				data["boot_id"] = now
				res.Data = data
				res.Msg = fmt.Sprintf("rebooted; %s was back with boot id %s after %v", sid, now, time.Since(start).Round(time.Second))
				return res
			}
		}
		select {
		case <-ctx.Done():
			res.Failed, res.RC = true, -1
			res.Msg = fmt.Sprintf("cancelled while waiting for %s to come back from its reboot: %v", sid, context.Cause(ctx))
			return res
		case <-deadline.C:
			res.Failed, res.RC = true, -1
			res.Msg = fmt.Sprintf("%s did not come back from its reboot within %v (still boot id %s, or its soul not connected)", sid, timeout, prev)
			return res
		case <-tick.C:
		}
	}
}
