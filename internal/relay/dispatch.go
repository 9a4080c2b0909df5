package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// wait is one relayed batch this keeper awaits.
type wait struct {
	id     int64
	target string
	kick   chan struct{} // buffered 1: results may be ready, or fail is set

	mu   sync.Mutex
	fail *domain.Result // set (then kicked) when Run stops: every soul left gets it
}

// poke wakes the batch's owner without blocking.
func (w *wait) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Dispatch implements dispatch.Dispatcher. A request whose soul holds a
// stream to this keeper, or that no other keeper holds, goes to the local
// gateway (which answers unreachable for a soul connected nowhere); the
// requests whose souls the store shows connected to another keeper (read
// in one query) travel to it as one batch, whose results come back in
// batches as its souls answer. A batch is unreachable at once when its
// keeper is not running, and gets the answers that keeper's gateway gives
// otherwise; this keeper gives up after the work's timeout plus both
// keepers' graces (failed), or when ctx ends (failed, and the other keeper
// is told to cancel).
func (r *Relay) Dispatch(ctx context.Context, reqs []dispatch.Request, onResult func(sid string, r domain.Result)) map[string]domain.Result {
	if r.pg == nil {
		return r.cfg.Local.Dispatch(ctx, reqs, onResult)
	}
	local, remote := r.route(ctx, reqs)
	if len(remote) == 0 {
		return r.cfg.Local.Dispatch(ctx, local, onResult)
	}

	out := make(map[string]domain.Result, len(reqs))
	var mu sync.Mutex // out, and onResult, which need not be safe for concurrent use
	record := func(sid string, res domain.Result) {
		mu.Lock()
		defer mu.Unlock()
		if _, seen := out[sid]; seen {
			return
		}
		out[sid] = res
		if onResult != nil {
			onResult(sid, res)
		}
	}
	var wg sync.WaitGroup
	if len(local) > 0 {
		wg.Go(func() {
			for sid, res := range r.cfg.Local.Dispatch(ctx, local, record) {
				record(sid, res) // a Dispatcher that skipped onResult for it
			}
		})
	}
	for target, rs := range remote {
		wg.Go(func() { r.relayTo(ctx, target, rs, record) })
	}
	wg.Wait()
	return out
}

// route splits reqs into those the local gateway answers and those to
// relay, by keeper.
func (r *Relay) route(ctx context.Context, reqs []dispatch.Request) ([]dispatch.Request, map[string][]dispatch.Request) {
	var elsewhere []string
	for _, req := range reqs {
		if !r.cfg.Local.Connected(req.SID) {
			elsewhere = append(elsewhere, req.SID)
		}
	}
	if len(elsewhere) == 0 {
		return reqs, nil
	}
	holders, err := r.st.SoulHolders(ctx, elsewhere)
	if err != nil {
		r.log.Warn("reading which keepers hold the souls to route work; trying this keeper's streams", "souls", len(elsewhere), "err", err)
		return reqs, nil
	}
	var local []dispatch.Request
	remote := map[string][]dispatch.Request{}
	for _, req := range reqs {
		if k := holders[req.SID]; k != "" && k != r.cfg.KeeperID && !r.cfg.Local.Connected(req.SID) {
			remote[k] = append(remote[k], req)
		} else {
			local = append(local, req)
		}
	}
	return local, remote
}

// relayTo sends reqs to keeper target through the database, in as few
// batches as fit, and records every soul's answer.
func (r *Relay) relayTo(ctx context.Context, target string, reqs []dispatch.Request, record func(string, domain.Result)) {
	all := func(res func(sid string) domain.Result) {
		for _, req := range reqs {
			record(req.SID, res(req.SID))
		}
	}
	switch ok, err := r.isAlive(ctx, target); {
	case err != nil && ctx.Err() != nil:
		all(func(string) domain.Result { return failed("cancelled: %v", context.Cause(ctx)) })
		return
	case err != nil:
		all(func(sid string) domain.Result {
			return failed("relaying to keeper %s, which holds soul %s's stream: %v", target, sid, err)
		})
		return
	case !ok:
		all(func(sid string) domain.Result {
			return unreachable("soul %s is connected to keeper %s, which is not running (no relay listener)", sid, target)
		})
		return
	}
	for i := range reqs {
		if reqs[i].Work.Timeout <= 0 {
			reqs[i].Work.Timeout = r.cfg.DefaultTimeout
		}
	}
	batches, err := newBatches(reqs)
	if err != nil {
		all(func(string) domain.Result { return failed("%v", err) })
		return
	}
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Go(func() { r.relayBatch(ctx, target, b, record) })
	}
	wg.Wait()
}

// relayBatch writes one batch for keeper target, tells it, and records
// its souls' results as they come back.
func (r *Relay) relayBatch(ctx context.Context, target string, bw *batchWork, record func(string, domain.Result)) {
	pending := make(map[string]bool, len(bw.Souls))
	var timeout time.Duration
	for _, s := range bw.Souls {
		pending[s.SID] = true
	}
	for _, w := range bw.Works {
		timeout = max(timeout, w.Timeout)
	}
	rest := func(res func(sid string) domain.Result) {
		for sid := range pending {
			record(sid, res(sid))
		}
		clear(pending)
	}
	payload, err := r.codec.encode(bw, adWork)
	if err != nil {
		rest(func(string) domain.Result { return failed("encoding work: %v", err) })
		return
	}
	bound := timeout + grace(timeout) + relayGrace
	now := time.Now()
	id, err := r.st.CreateRelayBatch(ctx, store.RelayBatch{
		FromKeeper: r.cfg.KeeperID, ToKeeper: target, RunID: bw.Works[0].RunID, Task: bw.Works[0].Task,
		Souls: len(bw.Souls), Work: payload, CreatedAt: now, Deadline: now.Add(bound),
	})
	if err != nil {
		rest(func(sid string) domain.Result {
			if ctx.Err() != nil {
				return failed("cancelled: %v", context.Cause(ctx))
			}
			return failed("relaying to keeper %s, which holds soul %s's stream: %v", target, sid, err)
		})
		return
	}
	r.stats.batches.Add(1)
	r.stats.bytes.Add(int64(len(payload)))
	w := &wait{id: id, target: target, kick: make(chan struct{}, 1)}
	r.mu.Lock()
	r.waits[id] = w
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waits, id)
		r.mu.Unlock()
	}()
	if err := r.notify(ctx, target, msgWork, id); err != nil {
		// The target finds the row when its listener rescans; if it is
		// gone, the poll below notices.
		r.log.Warn("telling a keeper it has relayed work", "to", target, "id", id, "err", err)
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	since := time.Now()
	for {
		select {
		case <-w.kick:
			w.mu.Lock()
			fail := w.fail
			w.mu.Unlock()
			if fail != nil {
				r.giveUp(id, target, pending, record)
				rest(func(string) domain.Result { return *fail })
				return
			}
			if r.collect(ctx, w, pending, record) {
				return
			}
		case <-poll.C:
			// The keeper may have died (its lock is gone) or a
			// notification been lost.
			alive, err := r.isAlive(ctx, target)
			if err == nil && !alive {
				r.giveUp(id, target, pending, record)
				rest(func(sid string) domain.Result {
					return unreachable("keeper %s, which held soul %s's stream, stopped before the soul answered", target, sid)
				})
				return
			}
			if time.Since(since) > r.cfg.PollInterval && r.collect(ctx, w, pending, record) {
				return
			}
		case <-timer.C:
			r.giveUp(id, target, pending, record)
			rest(func(sid string) domain.Result {
				res := failed("timed out: keeper %s, which holds soul %s's stream, gave no result within the task timeout of %s",
					target, sid, timeout)
				res.Abandoned = true
				return res
			})
			return
		case <-ctx.Done():
			r.giveUp(id, target, pending, record)
			rest(func(string) domain.Result {
				res := failed("cancelled: %v", context.Cause(ctx))
				res.Abandoned = true
				return res
			})
			return
		}
	}
}

// collect takes the results written so far for batch w and records them;
// true when the batch is over (done, or gone), every soul then answered.
func (r *Relay) collect(ctx context.Context, w *wait, pending map[string]bool, record func(string, domain.Result)) bool {
	b, rows, err := r.st.TakeRelayResults(ctx, w.id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		for sid := range pending {
			record(sid, failed("relayed work %d for keeper %s was deleted before it answered", w.id, w.target))
		}
		clear(pending)
		return true
	case err != nil:
		if ctx.Err() == nil {
			r.log.Warn("collecting relayed results", "id", w.id, "err", err)
		}
		return false // the poll retries while the wait lasts
	}
	r.deliver(w.target, rows, pending, record)
	if b.Status != store.RelayDone {
		return false
	}
	var fallback domain.Result
	if len(b.Fallback) > 0 {
		fallback, err = r.decodeFallback(b.Fallback)
		if err != nil {
			fallback = failed("%v", err)
		}
	}
	for sid := range pending {
		if len(b.Fallback) > 0 {
			record(sid, fallback)
		} else {
			record(sid, failed("keeper %s finished the relayed work without a result for soul %s", w.target, sid))
		}
	}
	clear(pending)
	if _, err := r.st.DeleteRelayBatch(context.WithoutCancel(ctx), w.id); err != nil && !errors.Is(err, domain.ErrNotFound) {
		r.log.Warn("deleting a finished relay batch", "id", w.id, "err", err)
	}
	return true
}

// deliver records the results of rows for the souls still pending.
func (r *Relay) deliver(target string, rows []store.RelayResults, pending map[string]bool, record func(string, domain.Result)) {
	for _, row := range rows {
		rs, err := r.codec.decodeResults(row.Body)
		if err != nil {
			r.log.Warn("relayed results that do not decode", "from", target, "souls", row.Souls, "err", err)
			continue // those souls fail when the batch ends
		}
		for _, br := range rs {
			if !pending[br.SID] {
				continue // not a soul of this batch, or answered already
			}
			res, err := br.result()
			if err != nil {
				res = failed("keeper %s answered for soul %s: %v", target, br.SID, err)
			}
			delete(pending, br.SID)
			record(br.SID, res)
		}
	}
}

// giveUp deletes batch id, recording the results written meanwhile, and
// tells its keeper to cancel what is left.
func (r *Relay) giveUp(id int64, target string, pending map[string]bool, record func(string, domain.Result)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, rows, err := r.st.TakeRelayResults(ctx, id); err == nil {
		r.deliver(target, rows, pending, record)
	}
	b, err := r.st.DeleteRelayBatch(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return
	case err != nil:
		r.log.Warn("deleting relayed work given up on", "id", id, "err", err)
		return
	case b.Status == store.RelayDone || len(pending) == 0:
		return
	}
	if err := r.notify(ctx, target, msgCancel, id); err != nil {
		r.log.Warn("telling a keeper to cancel relayed work", "to", target, "id", id, "err", err)
	}
}

// wake pokes the wait of batch id, if this keeper awaits it.
func (r *Relay) wake(id int64) {
	r.mu.Lock()
	w := r.waits[id]
	r.mu.Unlock()
	if w != nil {
		w.poke()
	}
}

// allWaits is every wait this keeper has, taken under the lock.
func (r *Relay) allWaits() []*wait {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.waits))
}

// wakeAll pokes every wait (notifications may have been lost).
func (r *Relay) wakeAll() {
	for _, w := range r.allWaits() {
		w.poke()
	}
}

// failWaits answers every soul of every wait with res.
func (r *Relay) failWaits(res domain.Result) {
	for _, w := range r.allWaits() {
		w.mu.Lock()
		w.fail = &res
		w.mu.Unlock()
		w.poke()
	}
}

func (r *Relay) encodeFallback(res domain.Result) ([]byte, error) {
	b, err := r.codec.encodeResults([]batchResult{{SID: "*", Result: mustJSON(res)}})
	if err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	return b, nil
}

func (r *Relay) decodeFallback(b []byte) (domain.Result, error) {
	rs, err := r.codec.decodeResults(b)
	if err != nil {
		return domain.Result{}, err
	}
	if len(rs) != 1 {
		return domain.Result{}, errors.New("decoding relayed results: a fallback holds one result")
	}
	return rs[0].result()
}
