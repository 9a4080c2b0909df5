package soul

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/health"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// newHealth prepares the agent's health check scheduler; it resumes the
// checks kept in the data directory.
func (a *Agent) newHealth() {
	a.health = health.NewScheduler(health.SchedulerConfig{
		SID:             a.cfg.SID,
		Dir:             a.cfg.DataDir,
		Run:             func(ctx context.Context, w dispatch.Work) domain.Result { return a.runner.Run(ctx, w) },
		Send:            a.sendHealth,
		SummaryInterval: a.cfg.HealthSummaryInterval,
		Logger:          a.log,
	})
}

// sendHealth sends a report on the current stream; false without one.
func (a *Agent) sendHealth(r health.Report) bool {
	a.mu.Lock()
	c := a.conn
	a.mu.Unlock()
	if c == nil {
		return false
	}
	b, err := json.Marshal(r)
	if err != nil {
		a.log.Warn("encoding a health report", "err", err)
		return false
	}
	return c.send(&pb.SoulMessage{Msg: &pb.SoulMessage_Health{Health: &pb.HealthReport{Report: b}}}) == nil
}

// onHealthAssignment applies the keeper's health message.
func (a *Agent) onHealthAssignment(ctx context.Context, m *pb.HealthAssignment) {
	var as health.Assignment
	if err := json.Unmarshal(m.Assignment, &as); err != nil {
		a.log.Warn("ignoring an undecodable health assignment", "err", err)
		return
	}
	if as.RunID != "" {
		a.health.RunNow(ctx, as.Incarnation, as.RunID)
		return
	}
	a.health.Set(as.Checks)
	a.log.Debug("health checks assigned", "count", len(as.Checks))
}

// vitalsMsg collects the vital signs into a message.
func (a *Agent) vitalsMsg(ctx context.Context) (*pb.SoulMessage, error) {
	collect := a.cfg.Vitals
	if collect == nil {
		collect = func(ctx context.Context) map[string]any { return CollectVitals(ctx, a.cfg.Root) }
	}
	b, err := json.Marshal(collect(ctx))
	if err != nil {
		return nil, fmt.Errorf("encoding vital signs: %w", err)
	}
	return &pb.SoulMessage{Msg: &pb.SoulMessage_Vitals{Vitals: &pb.VitalSigns{Vitals: b}}}, nil
}
