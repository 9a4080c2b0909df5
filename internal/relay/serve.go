package relay

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

// serveAsync serves relay row id in a goroutine owned by Run.
func (r *Relay) serveAsync(id int64) {
	rs := r.running.Load()
	if rs == nil {
		return
	}
	rs.wg.Go(func() { r.serve(rs, id) })
}

// serve claims row id (when it is addressed here and nobody claimed it
// yet), runs its work through the local gateway, writes the result and
// tells the sender.
func (r *Relay) serve(rs *runState, id int64) {
	row, err := r.st.ClaimRelay(rs.ctx, id, r.cfg.KeeperID)
	if err != nil {
		if c := domain.ErrorCode(err); c != domain.CodeNotFound && c != domain.CodeConflict && rs.ctx.Err() == nil {
			r.log.Warn("claiming relayed work", "id", id, "err", err)
		}
		return
	}
	var res domain.Result
	var work dispatch.Work
	switch err := json.Unmarshal(row.Work, &work); {
	case err != nil:
		res = failed("keeper %s could not decode the work relayed for soul %s: %v", r.cfg.KeeperID, row.SID, err)
	case !time.Now().Before(row.Deadline):
		res = failed("timed out: the work for soul %s expired before keeper %s picked it up", row.SID, r.cfg.KeeperID)
	default:
		ctx, cancel := context.WithCancelCause(rs.ctx)
		ctx, cancelDeadline := context.WithDeadline(ctx, row.Deadline)
		rs.mu.Lock()
		rs.serving[id] = cancel
		rs.mu.Unlock()
		res = r.cfg.Local.Dispatch(ctx, []dispatch.Request{{SID: row.SID, Work: work}}, nil)[row.SID]
		if errors.Is(context.Cause(ctx), errShuttingDown) && !res.Unreachable && res.Failed {
			// The streams are going away with this keeper: to the sender
			// that is a connection dropping before the soul answered.
			res = unreachable("keeper %s, which holds soul %s's stream, shut down before the soul answered", r.cfg.KeeperID, row.SID)
		}
		cancelDeadline()
		cancel(nil)
		rs.mu.Lock()
		delete(rs.serving, id)
		rs.mu.Unlock()
	}
	r.finish(row.ID, row.SID, res)
}

// finish writes the result of row id and tells its sender.
func (r *Relay) finish(id int64, sid string, res domain.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := encodeResult(res)
	if err != nil {
		body, _ = encodeResult(failed("keeper %s answered for soul %s: %v", r.cfg.KeeperID, sid, err))
	}
	row, err := r.st.FinishRelay(ctx, id, body, time.Now())
	if err != nil {
		if domain.ErrorCode(err) != domain.CodeNotFound { // not found: the sender gave up and took it
			r.log.Warn("writing a relayed result", "id", id, "sid", sid, "err", err)
		}
		return
	}
	if err := r.notify(ctx, row.FromKeeper, msgResult, id); err != nil {
		// The sender's poller finds the finished row.
		r.log.Warn("telling a keeper its relayed result is ready", "to", row.FromKeeper, "id", id, "err", err)
	}
}

// cancelServed cancels the work of row id, if it is being served here (its
// sender gave up on it).
func (r *Relay) cancelServed(id int64) {
	rs := r.running.Load()
	if rs == nil {
		return
	}
	rs.mu.Lock()
	cancel := rs.serving[id]
	rs.mu.Unlock()
	if cancel != nil {
		cancel(errCancelledBySender)
	}
}

var errCancelledBySender = errors.New("the keeper that relayed the work gave up on it")
