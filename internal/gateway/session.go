package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// session is one accepted soul's stream. The handler goroutine reads it; a
// drain goroutine, started only while messages are queued, sends them (an
// idle soul costs no writer stack). Waiters are the tasks sent to this soul
// that still wait for an answer.
type session struct {
	g      *Gateway
	sid    string
	stream soulStream

	lastSeen  atomic.Int64 // unix nanos of the last message from the soul
	moveAsked atomic.Bool  // Move sent: the soul may leave
	touched   int64        // last seen as last written to the store; housekeeping only

	mu      sync.Mutex
	closed  bool
	reason  string // why the session closed
	queue   []*pb.KeeperMessage
	writing bool           // a goroutine owns stream.Send: the handler (welcome) or drain
	drains  sync.WaitGroup // drain goroutines, waited for by serve
	waiters map[string]*waiter
}

func newSession(g *Gateway, sid string, stream soulStream) *session {
	s := &session{
		g: g, sid: sid, stream: stream,
		waiters: make(map[string]*waiter),
		writing: true, // until the welcome is sent
	}
	now := time.Now().UnixNano()
	s.lastSeen.Store(now)
	s.touched = now
	return s
}

// serve attaches the session, welcomes the soul and runs the stream until
// it breaks or is aborted; then every waiting task becomes unreachable and
// the soul is recorded disconnected.
func (s *session) serve(ctx context.Context, covens []string, log *slog.Logger) error {
	defer s.g.detach(s)
	// start's frame is gone while the session reads (a small idle stack).
	if ok, err := s.start(ctx, covens, log); !ok {
		return err
	}
	s.end(s.readLoop(ctx), log)
	return nil
}

// end closes the session after its stream failed with err.
func (s *session) end(err error, log *slog.Logger) {
	reason := "connection closed"
	if sr := (stoppedReading{}); errors.As(err, &sr) { // a pong did not go out
		reason = sr.Error()
		log.Warn("closing the stream of a soul that stopped reading", "err", err)
	} else if serr := s.stream.Stalled(); serr != nil { // the send's deadline broke the reads
		reason = serr.Error()
	}
	s.close(reason)
	s.stream.Unblock()
	s.drains.Wait()
	s.mu.Lock()
	reason = s.reason
	s.mu.Unlock()
	log.Info("soul disconnected", "reason", reason, "err", err)
}

// start attaches the session and welcomes the soul; when it cannot (ok
// false), err ends the stream.
func (s *session) start(ctx context.Context, covens []string, log *slog.Logger) (ok bool, err error) {
	g := s.g
	if err := g.attach(ctx, s); err != nil {
		if errors.Is(err, errNotAccepted) {
			// Rejected between the hello's decision and now: refused as
			// its next hello would be.
			s.close("rejected by an Archon")
			log.Info("soul refused", "reason", "rejected while connecting")
			return false, sendClose(s.stream, rejectedMsg(pb.Rejected_REASON_REJECTED, "an Archon rejected soul "+s.sid))
		}
		s.close("could not attach: " + err.Error())
		if errors.Is(err, errStopping) {
			return false, connect.NewError(connect.CodeUnavailable, err)
		}
		log.Error("attaching soul", "err", err)
		return false, connect.NewError(connect.CodeUnavailable, err)
	}
	welcome := &pb.KeeperMessage{Msg: &pb.KeeperMessage_Welcome{Welcome: &pb.Welcome{
		KeeperId:            g.cfg.KeeperID,
		Covens:              covens,
		HeartbeatIntervalMs: g.cfg.HeartbeatInterval.Milliseconds(),
	}}}
	if err := s.stream.Send(welcome); err != nil {
		s.close("sending welcome failed")
		return false, fmt.Errorf("sending welcome to %s: %w", s.sid, err)
	}
	log.Info("soul connected")
	if f := g.cfg.OnWelcome; f != nil {
		f(s.sid)
	}
	s.mu.Lock()
	s.writing = false
	s.startDrainLocked()
	s.mu.Unlock()
	return true, nil
}

// readLoop handles the soul's messages until the stream fails. It is
// where an idle soul's reader waits: its frames are kept small (handle
// does the work), so the reader's stack stays small.
func (s *session) readLoop(ctx context.Context) error {
	for {
		msg, err := s.stream.Receive()
		if err != nil {
			return err
		}
		s.handle(ctx, msg)
	}
}

// handle handles one message of the soul.
func (s *session) handle(ctx context.Context, msg *pb.SoulMessage) {
	s.lastSeen.Store(time.Now().UnixNano())
	switch m := msg.Msg.(type) {
	case *pb.SoulMessage_Heartbeat:
	case *pb.SoulMessage_Result:
		s.deliver(m.Result)
	case *pb.SoulMessage_Soulprint:
		s.updateSoulprint(ctx, m.Soulprint.GetSoulprint())
	case *pb.SoulMessage_Health:
		if f := s.g.cfg.OnHealth; f != nil {
			f(s.sid, m.Health.GetReport())
		}
	case *pb.SoulMessage_Vitals:
		if f := s.g.cfg.OnVitals; f != nil {
			f(s.sid, m.Vitals.GetVitals())
		}
	case *pb.SoulMessage_Leaving:
		s.leaving()
	case *pb.SoulMessage_Log:
		if f := s.g.cfg.OnLog; f != nil {
			f(s.sid, m.Log.TaskId, m.Log.Level, m.Log.Text)
		}
	default:
		s.g.log.Debug("ignoring unexpected soul message", "sid", s.sid, "type", fmt.Sprintf("%T", msg.Msg))
	}
}

func (s *session) updateSoulprint(ctx context.Context, b []byte) {
	sp, err := decodeSoulprint(b)
	if err != nil || sp == nil {
		s.g.log.Warn("ignoring a bad soulprint update", "sid", s.sid, "err", err)
		return
	}
	if err := s.g.cfg.Store.UpdateSoulprint(ctx, s.sid, sp, time.Now()); err != nil {
		s.g.log.Warn("storing soulprint update", "sid", s.sid, "err", err)
	}
}

// startDrainLocked starts a drain goroutine when messages wait and nobody
// is sending. s.mu must be held.
func (s *session) startDrainLocked() {
	if s.writing || s.closed || len(s.queue) == 0 {
		return
	}
	s.writing = true
	s.drains.Add(1)
	go s.drain()
}

// drain sends the queued messages until the queue is empty or the session
// closed, then gives up the sender role.
func (s *session) drain() {
	defer s.drains.Done()
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		if len(batch) == 0 || s.closed {
			s.writing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, m := range batch {
			if err := s.stream.Send(m); err != nil {
				reason := "sending failed: " + err.Error()
				if sr := (stoppedReading{}); errors.As(err, &sr) {
					reason = sr.Error()
					s.g.log.Warn("closing the stream of a soul that stopped reading", "sid", s.sid, "err", err)
				}
				s.abort(reason)
				s.mu.Lock()
				s.writing = false
				s.mu.Unlock()
				return
			}
		}
	}
}

// enqueue queues m for sending; false when the session is closed.
func (s *session) enqueue(m *pb.KeeperMessage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.queue = append(s.queue, m)
	s.startDrainLocked()
	return true
}

// close ends the session for Dispatch: no new waiters, every current one
// answered unreachable. Idempotent.
func (s *session) close(reason string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.reason = reason
	ws := s.waiters
	s.waiters = nil
	s.queue = nil
	s.mu.Unlock()
	msg := fmt.Sprintf("soul %s disconnected before answering (%s)", s.sid, reason)
	for _, w := range ws {
		w.finish(unreachable(msg))
	}
}

// abort closes the session and breaks its stream, so the handler returns.
func (s *session) abort(reason string) {
	s.close(reason)
	s.stream.Unblock()
}

// deliver answers the waiter of a result; a result nobody waits for (late,
// duplicate, or for a task of another keeper process) is handed to
// OnLateResult and otherwise dropped.
func (s *session) deliver(tr *pb.TaskResult) {
	r, err := dispatch.DecodeResult(tr.Result)
	if err != nil {
		r = domain.Result{Failed: true, Msg: "the soul sent an undecodable result: " + err.Error()}
	}
	// A soul answers; it cannot declare its own answer a keeper verdict
	// that a later result may replace (L5).
	r.Abandoned = false
	s.mu.Lock()
	w := s.waiters[tr.TaskId]
	if w != nil {
		delete(s.waiters, tr.TaskId)
	}
	s.mu.Unlock()
	if w != nil {
		w.finish(r)
		return
	}
	s.g.log.Debug("dropping a result nobody waits for", "sid", s.sid, "run_id", tr.RunId, "task_id", tr.TaskId)
	if f := s.g.cfg.OnLateResult; f != nil {
		f(s.sid, tr.RunId, tr.TaskId, r)
	}
}

// waiter is one task sent to a soul and not answered yet. Whoever removes
// it from its session's map answers it, exactly once.
type waiter struct {
	sid     string
	taskID  string
	timeout time.Duration
	sess    *session
	timer   *time.Timer
	answers chan<- answer
}

// answer is one request's result, sent to its Dispatch call.
type answer struct {
	w   *waiter
	sid string
	r   domain.Result
}

func (w *waiter) finish(r domain.Result) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.answers <- answer{w: w, sid: w.sid, r: r}
}

// take removes w from its session's waiters; true when the caller now owns
// the answer.
func (w *waiter) take() bool {
	s := w.sess
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters[w.taskID] != w {
		return false
	}
	delete(s.waiters, w.taskID)
	return true
}

// expire fails w after its timeout and asks the soul to stop the task.
func (w *waiter) expire() {
	if !w.take() {
		return
	}
	w.sess.enqueue(cancelMsg(w.taskID, "timed out"))
	w.finish(domain.Result{Failed: true, RC: -1, Abandoned: true,
		Msg: fmt.Sprintf("timed out: soul %s gave no result within the task timeout of %s; cancel sent", w.sid, w.timeout)})
}

// cancel fails w because the dispatch was cancelled and tells the soul.
func (w *waiter) cancel(cause error) {
	if !w.take() {
		return
	}
	w.sess.enqueue(cancelMsg(w.taskID, "cancelled"))
	w.finish(domain.Result{Failed: true, RC: -1, Abandoned: true, Msg: "cancelled: " + cause.Error()})
}

func cancelMsg(taskID, reason string) *pb.KeeperMessage {
	return &pb.KeeperMessage{Msg: &pb.KeeperMessage_Cancel{Cancel: &pb.Cancel{TaskId: taskID, Reason: reason}}}
}

func unreachable(msg string) domain.Result {
	return domain.Result{Unreachable: true, RC: -1, Msg: msg}
}
