package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// wait is one relayed request this keeper awaits.
type wait struct {
	id     int64
	sid    string
	target string
	since  time.Time
	done   chan domain.Result // buffered: whoever unregisters the wait sends once
}

// Dispatch implements dispatch.Dispatcher. A request whose soul holds a
// stream to this keeper, or that no other keeper holds, goes to the local
// gateway (which answers unreachable for a soul connected nowhere); one
// whose soul the store shows connected to another keeper is relayed to it.
// A relayed request is unreachable at once when that keeper is not running,
// and gets the answer that keeper's gateway gives otherwise; this keeper
// gives up after the work's timeout plus both keepers' graces (failed), or
// when ctx ends (failed, and the other keeper is told to cancel).
func (r *Relay) Dispatch(ctx context.Context, reqs []dispatch.Request, onResult func(sid string, r domain.Result)) map[string]domain.Result {
	if r.pg == nil {
		return r.cfg.Local.Dispatch(ctx, reqs, onResult)
	}
	var local []dispatch.Request
	type remote struct {
		req    dispatch.Request
		target string
	}
	var remotes []remote
	for _, req := range reqs {
		if target := r.holder(ctx, req.SID); target != "" {
			remotes = append(remotes, remote{req, target})
		} else {
			local = append(local, req)
		}
	}
	if len(remotes) == 0 {
		return r.cfg.Local.Dispatch(ctx, local, onResult)
	}

	out := make(map[string]domain.Result, len(reqs))
	var mu sync.Mutex // out, and onResult, which need not be safe for concurrent use
	record := func(sid string, res domain.Result) {
		mu.Lock()
		defer mu.Unlock()
		out[sid] = res
		if onResult != nil {
			onResult(sid, res)
		}
	}
	var wg sync.WaitGroup
	if len(local) > 0 {
		wg.Go(func() {
			for sid, res := range r.cfg.Local.Dispatch(ctx, local, record) {
				mu.Lock()
				_, seen := out[sid]
				mu.Unlock()
				if !seen { // a Dispatcher that skipped onResult for it
					record(sid, res)
				}
			}
		})
	}
	sem := make(chan struct{}, r.cfg.FanOut)
	for _, rm := range remotes {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			record(rm.req.SID, failed("cancelled before dispatch: %v", context.Cause(ctx)))
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			record(rm.req.SID, r.relay(ctx, rm.req, rm.target))
		})
	}
	wg.Wait()
	return out
}

// holder returns the keeper holding sid's stream when it is another
// keeper, else "" (this keeper, nobody, or unknown: the local gateway
// answers).
func (r *Relay) holder(ctx context.Context, sid string) string {
	if r.cfg.Local.Connected(sid) {
		return ""
	}
	so, err := r.st.GetSoul(ctx, sid)
	if err != nil {
		if !errors.Is(err, domain.ErrNotFound) {
			r.log.Warn("reading soul to route work; trying this keeper's streams", "sid", sid, "err", err)
		}
		return ""
	}
	if so.Status != store.SoulConnected || so.KeeperID == "" || so.KeeperID == r.cfg.KeeperID {
		return ""
	}
	return so.KeeperID
}

// relay sends req to keeper target through the database and waits for its
// answer.
func (r *Relay) relay(ctx context.Context, req dispatch.Request, target string) domain.Result {
	sid := req.SID
	work := req.Work
	if work.Timeout <= 0 {
		work.Timeout = r.cfg.DefaultTimeout
	}
	switch ok, err := r.isAlive(ctx, target); {
	case err != nil && ctx.Err() != nil:
		return failed("cancelled: %v", context.Cause(ctx))
	case err != nil:
		return failed("relaying to keeper %s, which holds soul %s's stream: %v", target, sid, err)
	case !ok:
		return unreachable("soul %s is connected to keeper %s, which is not running (no relay listener)", sid, target)
	}
	payload, err := json.Marshal(work)
	if err == nil && r.seal != nil {
		payload, err = r.seal.seal(payload, adWork)
	}
	if err != nil {
		return failed("encoding work: %v", err)
	}
	bound := work.Timeout + grace(work.Timeout) + relayGrace
	now := time.Now()
	id, err := r.st.CreateRelay(ctx, store.RelayWork{
		FromKeeper: r.cfg.KeeperID, ToKeeper: target, SID: sid, RunID: work.RunID, TaskID: work.TaskID,
		Work: payload, CreatedAt: now, Deadline: now.Add(bound),
	})
	if err != nil {
		if ctx.Err() != nil {
			return failed("cancelled: %v", context.Cause(ctx))
		}
		return failed("relaying to keeper %s, which holds soul %s's stream: %v", target, sid, err)
	}
	w := &wait{id: id, sid: sid, target: target, since: time.Now(), done: make(chan domain.Result, 1)}
	r.mu.Lock()
	r.waits[id] = w
	r.mu.Unlock()
	if err := r.notify(ctx, target, msgWork, id); err != nil {
		if r.unregister(id) {
			r.discard(id, target, false)
			if ctx.Err() != nil {
				return failed("cancelled: %v", context.Cause(ctx))
			}
			return failed("relaying to keeper %s, which holds soul %s's stream: %v", target, sid, err)
		}
		return <-w.done // answered meanwhile (the target found the row by a rescan)
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case res := <-w.done:
		return res
	case <-timer.C:
		if !r.unregister(id) {
			return <-w.done
		}
		if res, ok := r.discard(id, target, true); ok {
			return res // answered just now
		}
		res := failed("timed out: keeper %s, which holds soul %s's stream, gave no result within the task timeout of %s",
			target, sid, work.Timeout)
		res.Abandoned = true
		return res
	case <-ctx.Done():
		if !r.unregister(id) {
			return <-w.done
		}
		r.discard(id, target, false)
		res := failed("cancelled: %v", context.Cause(ctx))
		res.Abandoned = true
		return res
	}
}

// unregister removes wait id; true when the caller now owns its answer.
func (r *Relay) unregister(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waits[id]; !ok {
		return false
	}
	delete(r.waits, id)
	return true
}

// deliver answers wait id, if it is still awaited.
func (r *Relay) deliver(id int64, res domain.Result) {
	r.mu.Lock()
	w := r.waits[id]
	delete(r.waits, id)
	r.mu.Unlock()
	if w != nil {
		w.done <- res
	}
}

// discard deletes the row of a request this keeper gave up on and, unless
// it was answered, tells the target keeper to cancel the work. With
// useDone, a row answered meanwhile yields its result.
func (r *Relay) discard(id int64, target string, useDone bool) (domain.Result, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	row, err := r.st.TakeRelay(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return domain.Result{}, false
	case err != nil:
		r.log.Warn("deleting relayed work given up on", "id", id, "err", err)
		return domain.Result{}, false
	case row.Status == store.RelayDone:
		if !useDone {
			return domain.Result{}, false
		}
		res, err := r.decodeResult(row.Result)
		if err != nil {
			return failed("%v", err), true
		}
		return res, true
	}
	if err := r.notify(ctx, target, msgCancel, id); err != nil {
		r.log.Warn("telling a keeper to cancel relayed work", "to", target, "id", id, "err", err)
	}
	return domain.Result{}, false
}

// collect takes the finished row id and answers its wait. A row nobody
// awaits yet is left alone: its sender may be between writing it and
// registering the wait (the poller collects it then), or gone (Recover
// deletes its rows, PruneRelays the rest).
func (r *Relay) collect(ctx context.Context, id int64) {
	r.mu.Lock()
	_, awaited := r.waits[id]
	r.mu.Unlock()
	if !awaited {
		return
	}
	row, err := r.st.TakeRelay(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return // collected by the poller, or given up on
	case err != nil:
		if ctx.Err() == nil {
			r.log.Warn("collecting a relayed result", "id", id, "err", err)
		}
		return // the poller retries while the wait lasts
	case row.Status != store.RelayDone:
		r.deliver(id, failed("relayed work %d was taken before keeper %s answered it", id, row.ToKeeper))
		return
	}
	res, err := r.decodeResult(row.Result)
	if err != nil {
		res = failed("keeper %s answered for soul %s: %v", row.ToKeeper, row.SID, err)
	}
	r.deliver(id, res)
}

// failWaits answers every wait with res.
func (r *Relay) failWaits(res domain.Result) {
	r.mu.Lock()
	ws := r.waits
	r.waits = map[int64]*wait{}
	r.mu.Unlock()
	for _, w := range ws {
		w.done <- res
	}
}

func (r *Relay) encodeResult(res domain.Result) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, errors.New("encoding result: " + err.Error())
	}
	if r.seal == nil {
		return b, nil
	}
	return r.seal.seal(b, adResult)
}

func (r *Relay) decodeResult(b []byte) (domain.Result, error) {
	if r.seal != nil {
		var err error
		if b, err = r.seal.open(b, adResult); err != nil {
			return domain.Result{}, fmt.Errorf("decoding relayed result: %w", err)
		}
	}
	res, err := dispatch.DecodeResult(b)
	if err != nil {
		return res, errors.New("decoding relayed result: " + err.Error())
	}
	return res, nil
}
