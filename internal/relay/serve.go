package relay

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

// serveAsync serves relay row id in a goroutine owned by Run, unless it is
// being served already (a notification and a rescan may both name it).
func (r *Relay) serveAsync(id int64) {
	rs := r.running.Load()
	if rs == nil {
		return
	}
	// Cancellable before the claim: a cancel that arrives meanwhile is not
	// lost (the sender deletes the row before it sends one, so the claim
	// then finds nothing).
	ctx, cancel := context.WithCancelCause(rs.ctx)
	rs.mu.Lock()
	if rs.serving[id] != nil {
		rs.mu.Unlock()
		cancel(nil)
		return
	}
	rs.serving[id] = cancel
	rs.mu.Unlock()
	rs.wg.Go(func() {
		defer func() {
			rs.mu.Lock()
			delete(rs.serving, id)
			rs.mu.Unlock()
			cancel(nil)
		}()
		r.serve(ctx, id)
	})
}

// serve claims row id (when it is addressed here and nobody claimed it
// yet), runs its work through the local gateway, writes the result and
// tells the sender.
func (r *Relay) serve(ctx context.Context, id int64) {
	row, err := r.st.ClaimRelay(ctx, id, r.cfg.KeeperID)
	if err != nil {
		if c := domain.ErrorCode(err); c != domain.CodeNotFound && c != domain.CodeConflict && ctx.Err() == nil {
			r.log.Warn("claiming relayed work", "id", id, "err", err)
		}
		return
	}
	var res domain.Result
	var work dispatch.Work
	payload, err := row.Work, error(nil)
	if r.seal != nil {
		payload, err = r.seal.open(payload, adWork)
	}
	if err == nil {
		err = json.Unmarshal(payload, &work)
	}
	if err != nil {
		res = failed("keeper %s could not decode the work relayed for soul %s: %v", r.cfg.KeeperID, row.SID, err)
	} else {
		// The sender's bound, measured from now on this keeper's clock
		// (the keepers' clocks may disagree).
		dctx, cancelDeadline := context.WithTimeout(ctx, row.Deadline.Sub(row.CreatedAt))
		res = r.cfg.Local.Dispatch(dctx, []dispatch.Request{{SID: row.SID, Work: work}}, nil)[row.SID]
		if errors.Is(context.Cause(dctx), errShuttingDown) && !res.Unreachable && res.Failed {
			// The streams are going away with this keeper: to the sender
			// that is a connection dropping before the soul answered.
			res = unreachable("keeper %s, which holds soul %s's stream, shut down before the soul answered", r.cfg.KeeperID, row.SID)
		}
		cancelDeadline()
	}
	r.finish(row.ID, row.SID, res)
}

// finish writes the result of row id and tells its sender.
func (r *Relay) finish(id int64, sid string, res domain.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := r.encodeResult(res)
	if err != nil {
		body, _ = r.encodeResult(failed("keeper %s answered for soul %s: %v", r.cfg.KeeperID, sid, err))
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
