package engine

import (
	"context"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
)

// DefaultDriftTick is how often RunDriftSchedules looks for due drift
// checks.
const DefaultDriftTick = 30 * time.Second

// RunDriftSchedules runs the incarnations' drift schedules (SPEC §8.9)
// until ctx ends: every tick (DefaultDriftTick when zero), when isLeader
// says this keeper leads, it starts a drift check of each incarnation
// whose schedule is due. A check that cannot start now (a run is active,
// the incarnation is locked) is tried again at the next tick; each new
// reason is logged once.
func (e *Engine) RunDriftSchedules(ctx context.Context, isLeader func() bool, tick time.Duration) {
	if tick <= 0 {
		tick = DefaultDriftTick
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	refused := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if isLeader != nil && !isLeader() {
			continue
		}
		e.driftTick(ctx, refused)
	}
}

func (e *Engine) driftTick(ctx context.Context, refused map[string]string) {
	ds, err := e.cfg.Store.ListDrift(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.WarnContext(ctx, "drift schedules: listing them failed", "err", err)
		}
		return
	}
	for _, d := range DriftDue(ds, e.now()) {
		id, err := e.DriftCheck(ctx, d.Incarnation, d.Schedule.Scenario, "")
		if err != nil {
			msg := err.Error()
			if refused[d.Incarnation] != msg {
				refused[d.Incarnation] = msg
				level := "drift check not started; trying again at the next tick"
				if domain.ErrorCode(err) == domain.CodeConflict {
					e.log.InfoContext(ctx, level, "incarnation", d.Incarnation, "err", err)
				} else {
					e.log.WarnContext(ctx, level, "incarnation", d.Incarnation, "err", err)
				}
			}
			continue
		}
		delete(refused, d.Incarnation)
		e.log.InfoContext(ctx, "scheduled drift check started", "incarnation", d.Incarnation, "apply_id", id, "scenario", d.Schedule.Scenario)
	}
}
