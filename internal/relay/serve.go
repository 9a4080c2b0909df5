package relay

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

// serveAsync serves relay batch id in a goroutine owned by Run, unless it
// is being served already (a notification and a rescan may both name it).
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
		r.serve(ctx, cancel, id)
	})
}

// serve claims batch id (when it is addressed here and nobody claimed it
// yet), runs its work through the local gateway and writes the results
// back in batches as the souls answer, telling the sender after each.
func (r *Relay) serve(ctx context.Context, cancel context.CancelCauseFunc, id int64) {
	row, err := r.st.ClaimRelayBatch(ctx, id, r.cfg.KeeperID)
	if err != nil {
		if c := domain.ErrorCode(err); c != domain.CodeNotFound && c != domain.CodeConflict && ctx.Err() == nil {
			r.log.Warn("claiming relayed work", "id", id, "err", err)
		}
		return
	}
	var bw batchWork
	var reqs []dispatch.Request
	err = r.codec.decode(row.Work, adWork, &bw)
	if err == nil {
		reqs, err = bw.requests()
	}
	out := &outbox{r: r, id: id, from: row.FromKeeper, cancel: cancel}
	if err != nil {
		// Without the SIDs nobody can be answered one by one: the batch
		// ends without results, which fails its souls at the sender.
		r.log.Warn("relayed work that does not decode", "from", row.FromKeeper, "id", id, "err", err)
		out.finish()
		return
	}
	// The sender's bound, measured from now on this keeper's clock (the
	// keepers' clocks may disagree).
	dctx, cancelDeadline := context.WithTimeout(ctx, row.Deadline.Sub(row.CreatedAt))
	defer cancelDeadline()
	adjust := func(sid string, res domain.Result) domain.Result {
		if errors.Is(context.Cause(dctx), errShuttingDown) && !res.Unreachable && res.Failed {
			// The streams are going away with this keeper: to the sender
			// that is a connection dropping before the soul answered.
			return unreachable("keeper %s, which holds soul %s's stream, shut down before the soul answered", r.cfg.KeeperID, sid)
		}
		return res
	}
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		out.flushEvery(dctx, r.cfg.FlushInterval)
	}()
	results := r.cfg.Local.Dispatch(dctx, reqs, func(sid string, res domain.Result) { out.add(sid, adjust(sid, res)) })
	for sid, res := range results {
		out.add(sid, adjust(sid, res)) // a gateway that skipped onResult for it
	}
	cancelDeadline()
	<-flushed
	out.finish()
}

// outbox gathers a served batch's results and writes them in rows.
type outbox struct {
	r      *Relay
	id     int64
	from   string
	cancel context.CancelCauseFunc

	mu   sync.Mutex
	seen map[string]bool
	buf  []batchResult
	gone bool // the sender deleted the batch
}

func (o *outbox) add(sid string, res domain.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	if o.seen[sid] {
		return
	}
	o.seen[sid] = true
	o.buf = append(o.buf, batchResult{SID: sid, Result: mustJSON(res)})
}

// flushEvery writes the gathered results every interval until ctx ends.
func (o *outbox) flushEvery(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			o.flush(false)
		}
	}
}

// finish writes the last results and marks the batch done.
func (o *outbox) finish() { o.flush(true) }

// flush writes the results gathered so far as one row (and, with final,
// marks the batch done), then tells the sender.
func (o *outbox) flush(final bool) {
	o.mu.Lock()
	buf := o.buf
	o.buf = nil
	gone := o.gone
	o.mu.Unlock()
	if gone || (len(buf) == 0 && !final) {
		return
	}
	r := o.r
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body []byte
	var err error
	if len(buf) > 0 {
		if body, err = r.codec.encodeResults(buf); err != nil {
			r.log.Warn("encoding relayed results", "id", o.id, "err", err)
			body = nil
		}
	}
	_, err = r.st.AddRelayResults(ctx, o.id, body, len(buf), final, time.Now())
	if err != nil {
		if domain.ErrorCode(err) == domain.CodeNotFound { // the sender gave up and deleted it
			o.mu.Lock()
			o.gone = true
			o.mu.Unlock()
			o.cancel(errCancelledBySender)
			return
		}
		r.log.Warn("writing relayed results", "id", o.id, "souls", len(buf), "err", err)
		if !final {
			o.mu.Lock()
			o.buf = append(buf, o.buf...) // retried at the next flush
			o.mu.Unlock()
		}
		return
	}
	r.stats.resultRows.Add(1)
	r.stats.bytes.Add(int64(len(body)))
	if err := r.notify(ctx, o.from, msgResult, o.id); err != nil {
		// The sender's poll finds the rows.
		r.log.Warn("telling a keeper its relayed results are ready", "to", o.from, "id", o.id, "err", err)
	}
}

// cancelServed cancels the work of batch id, if it is being served here
// (its sender gave up on it).
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

// mustJSON encodes a result (a struct of plain fields: it cannot fail).
func mustJSON(res domain.Result) json.RawMessage {
	b, err := json.Marshal(res)
	if err != nil {
		b, _ = json.Marshal(failed("encoding result: %v", err))
	}
	return b
}
