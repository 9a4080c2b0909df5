package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// Dispatch implements dispatch.Dispatcher over the connected souls' streams.
// At most FanOut requests of the call are in flight at once. A soul not
// connected here, or whose stream drops before it answers, is unreachable
// at once; one that stays connected past the work's timeout (Work.Timeout,
// or DefaultTimeout, which is then also sent to the soul as its deadline)
// fails and is told to cancel; cancelling ctx fails what is still in flight
// and cancels it on the souls. Requests must name distinct SIDs and carry
// distinct TaskIDs.
func (g *Gateway) Dispatch(ctx context.Context, reqs []dispatch.Request, onResult func(sid string, r domain.Result)) map[string]domain.Result {
	out := make(map[string]domain.Result, len(reqs))
	record := func(sid string, r domain.Result) {
		out[sid] = r
		if onResult != nil {
			onResult(sid, r)
		}
	}
	answers := make(chan answer, len(reqs))
	active := make(map[*waiter]struct{}, min(len(reqs), g.cfg.FanOut))
	next := 0
	for next < len(reqs) || len(active) > 0 {
		for next < len(reqs) && len(active) < g.cfg.FanOut && ctx.Err() == nil {
			req := reqs[next]
			next++
			w, r, ok := g.send(req, answers)
			if !ok {
				record(req.SID, r)
				continue
			}
			active[w] = struct{}{}
		}
		if len(active) == 0 {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		select {
		case a := <-answers:
			delete(active, a.w)
			record(a.sid, a.r)
		case <-ctx.Done():
			for w := range active {
				w.cancel(context.Cause(ctx))
			}
			for len(active) > 0 {
				a := <-answers
				delete(active, a.w)
				record(a.sid, a.r)
			}
		}
	}
	for _, req := range reqs[next:] {
		record(req.SID, domain.Result{Failed: true, RC: -1, Msg: "cancelled before dispatch: " + context.Cause(ctx).Error()})
	}
	return out
}

// send registers a waiter for req on its soul's session and queues the
// work. When it cannot (soul not connected, bad work), ok is false and r is
// the request's result.
func (g *Gateway) send(req dispatch.Request, answers chan<- answer) (w *waiter, r domain.Result, ok bool) {
	s := g.lookup(req.SID)
	if s == nil {
		return nil, unreachable(fmt.Sprintf("soul %s is not connected to keeper %s", req.SID, g.cfg.KeeperID)), false
	}
	work := req.Work
	if work.Timeout <= 0 {
		work.Timeout = g.cfg.DefaultTimeout
	}
	payload, err := json.Marshal(work)
	if err != nil {
		return nil, domain.Result{Failed: true, RC: -1, Msg: "encoding work: " + err.Error()}, false
	}
	msg := &pb.KeeperMessage{Msg: &pb.KeeperMessage_Work{Work: &pb.Work{RunId: work.RunID, TaskId: work.TaskID, Work: payload}}}
	w = &waiter{sid: req.SID, taskID: work.TaskID, timeout: work.Timeout, sess: s, answers: answers}
	// The keeper waits a little longer than the soul's own deadline, so
	// the soul's timeout result (with its partial output) usually wins.
	w.timer = time.AfterFunc(work.Timeout+grace(work.Timeout), w.expire)

	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		w.timer.Stop()
		return nil, unreachable(fmt.Sprintf("soul %s disconnected (%s)", req.SID, s.reason)), false
	case s.waiters[work.TaskID] != nil:
		s.mu.Unlock()
		w.timer.Stop()
		return nil, domain.Result{Failed: true, RC: -1, Msg: fmt.Sprintf("task %s is already running on soul %s", work.TaskID, req.SID)}, false
	}
	s.waiters[work.TaskID] = w
	s.queue = append(s.queue, msg)
	s.startDrainLocked()
	s.mu.Unlock()
	return w, domain.Result{}, true
}

// grace is how much longer than a task's timeout the keeper waits.
func grace(timeout time.Duration) time.Duration {
	return min(max(time.Second, timeout/10), 30*time.Second)
}
