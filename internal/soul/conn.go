package soul

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// handshakeTimeout bounds hello → welcome.
const handshakeTimeout = 30 * time.Second

// errPending is returned (wrapped, with the keeper's reason) by session
// when the keeper registered the soul but nobody accepted it yet.
var errPending = errors.New("pending acceptance")

// errCancelledByKeeper is the cancel cause of work the keeper cancelled.
var errCancelledByKeeper = errors.New("cancelled by the keeper")

// A result sent on a stream is not known to have reached the keeper: the
// stream has no acknowledgement, and during a link cut (packets dropped,
// no reset) sends succeed into the kernel's buffers while the keeper,
// hearing no heartbeat, gives the host up. The soul only learns of the cut
// when TCP gives up or the link comes back, and the result was lost (issue
// 36). So a session remembers the results it sent, and when it ends those
// sent within unconfirmedWindow go back to the outbox and are delivered
// again after the next welcome. The keeper records a result it already has
// as a late result that changes nothing (store.RecordLateResults never
// overwrites a final row), so sending one twice is harmless.
const (
	// unconfirmedWindow is longer than TCP takes to give a silent
	// connection up (tcp_retries2: about 15 minutes), so a result sent
	// earlier than this before its session ended was sent before the cut.
	unconfirmedWindow = 20 * time.Minute
	// maxUnconfirmed bounds the results one session remembers.
	maxUnconfirmed = 4096
)

// conn is a welcomed stream; send is safe for concurrent use.
type conn struct {
	stream clientStream
	ep     endpoint // the keeper address it goes to
	mu     sync.Mutex

	moveOnce sync.Once
	moved    chan struct{} // closed when the keeper asked the soul to move

	smu   sync.Mutex
	sent  []sentResult // results sent on this stream, oldest first
	ended bool         // unconfirmed was called: the session is over
}

// sentResult is a result sent on a stream, and when (monotonic clock).
type sentResult struct {
	p  pendingResult
	at time.Time
}

// errSessionEnded is sendResult's answer once the session ended.
var errSessionEnded = errors.New("the session ended")

// sendResult sends p and remembers it until the session ends; an error
// means p must be kept for the next session.
func (c *conn) sendResult(p pendingResult) error {
	if err := c.send(resultMsg(p)); err != nil {
		return err
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.ended {
		return errSessionEnded
	}
	if len(c.sent) >= maxUnconfirmed {
		c.sent = append(c.sent[:0], c.sent[1:]...)
	}
	c.sent = append(c.sent, sentResult{p: p, at: time.Now()})
	return nil
}

// unconfirmed ends the session's record of sent results and returns those
// sent within unconfirmedWindow of now.
func (c *conn) unconfirmed(now time.Time) []pendingResult {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.ended = true
	var out []pendingResult
	for _, s := range c.sent {
		if now.Sub(s.at) <= unconfirmedWindow {
			out = append(out, s.p)
		}
	}
	c.sent = nil
	return out
}

// isEnded reports whether the session of c is over.
func (c *conn) isEnded() bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.ended
}

// isMoving reports whether the keeper asked the soul to move off c.
func (c *conn) isMoving() bool {
	select {
	case <-c.moved:
		return true
	default:
		return false
	}
}

func (c *conn) send(m *pb.SoulMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream.Send(m)
}

// closeRequest ends the soul's side of the stream.
func (c *conn) closeRequest() {
	if l, ok := c.stream.(*leanClient); ok {
		// Closing the connection also breaks a send blocked under c.mu.
		_ = l.CloseRequest()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.stream.CloseRequest()
}

// errMoved is session's answer when the keeper asked the soul to move: the
// stream keeps serving (in its own goroutine) until the soul holds a
// stream to another keeper and the work this one gave has finished.
var errMoved = errors.New("the keeper asked this soul to move")

// busyError is a keeper's refusal as busy (over its soul budget, or being
// drained): not a verdict on the soul; retry it after retryAfter.
type busyError struct {
	retryAfter time.Duration
	msg        string
}

func (b *busyError) Error() string {
	return fmt.Sprintf("keeper is busy (%s); retry after %s", b.msg, b.retryAfter)
}

// defaultBusyRetry is the retry-after of a busy refusal that gives none.
const defaultBusyRetry = 10 * time.Second

// session dials keeper ep, runs the handshake and, once welcomed, serves
// the stream until it breaks, or until the keeper asks the soul to move
// (errMoved; the stream is then served on in the background). welcomed
// reports whether the keeper accepted the soul (the reconnect backoff then
// starts over).
func (a *Agent) session(ctx context.Context, ep endpoint) (welcomed bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	if a.cfg.Handshakes != nil {
		select {
		case a.cfg.Handshakes <- struct{}{}:
		case <-sctx.Done():
			cancel()
			return false, sctx.Err()
		}
	}
	hs := time.AfterFunc(handshakeTimeout, cancel)
	stream, err := a.openStream(sctx, ep)
	var welcome *pb.Welcome
	var c *conn
	var stopClose func() bool
	if err == nil {
		c = &conn{stream: stream, ep: ep, moved: make(chan struct{})}
		// Cancelling the request context does not interrupt a Connect
		// Receive once the response started; ending our side of the
		// stream makes the keeper end its side, which does (the lean
		// stream closes its connection).
		stopClose = context.AfterFunc(sctx, c.closeRequest)
		welcome, err = a.handshake(c)
	}
	hs.Stop()
	if a.cfg.Handshakes != nil {
		<-a.cfg.Handshakes
	}
	if err != nil {
		if c != nil {
			stopClose()
			cancel()
			c.closeRequest()
			_ = stream.CloseResponse()
		}
		cancel()
		return false, err
	}
	done := make(chan error, 1)
	a.serving.Add(1)
	go func() {
		defer a.serving.Done()
		defer func() {
			stopClose()
			cancel()
			c.closeRequest() // after a running AfterFunc's, through c.mu
			_ = stream.CloseResponse()
		}()
		done <- a.serve(ctx, sctx, cancel, c, welcome)
	}()
	select {
	case err := <-done:
		return true, err
	case <-c.moved:
		return true, errMoved
	}
}

// serve runs a welcomed stream until it breaks (or, after a move, until
// the soul left it).
func (a *Agent) serve(ctx, sctx context.Context, cancel context.CancelFunc, c *conn, welcome *pb.Welcome) error {
	transport := "h2"
	if _, ok := c.stream.(*leanClient); ok {
		transport = "soulstack/1"
	}
	a.log.Info("connected to keeper", "keeper", c.ep, "keeper_id", welcome.KeeperId, "covens", welcome.Covens, "transport", transport)
	a.mu.Lock()
	if a.trust.persist {
		if err := persistFingerprint(a.cfg.DataDir, a.trust.fingerprint); err != nil {
			a.log.Warn("could not keep the keeper fingerprint; restarts will need the token or flag again", "err", err)
		} else {
			a.trust.persist = false
		}
	}
	a.secret = nil
	a.conn = c
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		current := a.conn == c
		if current {
			a.conn = nil
		}
		a.mu.Unlock()
		// What this stream carried may have died with it: kept again
		// for the next welcome (see unconfirmedWindow).
		if ps := c.unconfirmed(time.Now()); len(ps) > 0 {
			a.log.Info("keeping the results sent on the closed stream until the next welcome, in case they were lost with it", "count", len(ps))
			for _, p := range ps {
				a.outbox.put(p)
			}
		}
		if current && c.isMoving() {
			// The soul found no other keeper before this one went
			// away: Run stops waiting on its avoidances.
			select {
			case a.wake <- struct{}{}:
			default:
			}
		}
	}()
	// Results that finished while disconnected go first, once each.
	for _, p := range a.outbox.list() {
		if err := c.sendResult(p); err != nil {
			return fmt.Errorf("delivering kept results: %w", err)
		}
		a.outbox.remove(p.TaskID)
	}

	// The keeper learns the current health at once, not at the next summary.
	a.health.SendSummary()

	hb := time.Duration(welcome.HeartbeatIntervalMs) * time.Millisecond
	if hb <= 0 {
		hb = 15 * time.Second
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.heartbeat(sctx, cancel, c, hb)
	}()
	err := a.receive(ctx, sctx, c)
	cancel()
	wg.Wait()
	return err
}

// handshake sends hello, answers the challenge and reads the verdict.
func (a *Agent) handshake(c *conn) (*pb.Welcome, error) {
	stream := c.stream
	hello := &pb.SoulMessage{Msg: &pb.SoulMessage_Hello{Hello: &pb.Hello{
		Sid:        a.cfg.SID,
		PublicKey:  a.PublicKey(),
		Version:    a.version,
		Soulprint:  a.soulprintJSON(),
		JoinSecret: a.secret,
	}}}
	if err := sendOrCause(c, hello); err != nil {
		return nil, fmt.Errorf("sending hello: %w", err)
	}
	m, err := stream.Receive()
	if err != nil {
		return nil, fmt.Errorf("waiting for the challenge: %w", err)
	}
	if r := m.GetRejected(); r != nil {
		return nil, refused(r)
	}
	ch := m.GetChallenge()
	if ch == nil || len(ch.Nonce) < 16 {
		return nil, fmt.Errorf("keeper sent %T instead of a challenge", m.Msg)
	}
	sig := ed25519.Sign(a.key, pb.ProofPayload(ch.Nonce, a.cfg.SID, a.trust.fingerprint))
	if err := sendOrCause(c, &pb.SoulMessage{Msg: &pb.SoulMessage_Proof{Proof: &pb.Proof{Signature: sig}}}); err != nil {
		return nil, fmt.Errorf("sending proof: %w", err)
	}
	if m, err = stream.Receive(); err != nil {
		return nil, fmt.Errorf("waiting for the keeper's verdict: %w", err)
	}
	switch v := m.Msg.(type) {
	case *pb.KeeperMessage_Welcome:
		return v.Welcome, nil
	case *pb.KeeperMessage_Pending:
		return nil, fmt.Errorf("%w: %s", errPending, v.Pending.Reason)
	case *pb.KeeperMessage_Rejected:
		return nil, refused(v.Rejected)
	default:
		return nil, fmt.Errorf("keeper sent %T instead of its verdict", m.Msg)
	}
}

// sendOrCause sends m; when the keeper already ended the stream (io.EOF)
// the keeper's error is read and returned instead.
func sendOrCause(c *conn, m *pb.SoulMessage) error {
	err := c.send(m)
	if errors.Is(err, io.EOF) {
		if _, rerr := c.stream.Receive(); rerr != nil {
			return rerr
		}
	}
	return err
}

func refused(r *pb.Rejected) error {
	switch r.Reason {
	case pb.Rejected_REASON_VERSION:
		return fmt.Errorf("%w: %s", ErrVersion, r.Message)
	case pb.Rejected_REASON_BUSY:
		d := time.Duration(r.RetryAfterMs) * time.Millisecond
		if d <= 0 {
			d = defaultBusyRetry
		}
		return &busyError{retryAfter: min(d, time.Hour), msg: r.Message}
	}
	return fmt.Errorf("%w: %s (%s)", ErrRefused, r.Message, r.Reason)
}

// receive handles the keeper's messages on c until the stream fails. Work
// runs under ctx, the agent's lifetime, so it survives a reconnect; sctx
// is the session's.
func (a *Agent) receive(ctx, sctx context.Context, c *conn) error {
	for {
		m, err := c.stream.Receive()
		if err != nil {
			return fmt.Errorf("receiving from keeper: %w", err)
		}
		switch v := m.Msg.(type) {
		case *pb.KeeperMessage_Work:
			a.startTask(ctx, v.Work, c)
		case *pb.KeeperMessage_Move:
			c.moveOnce.Do(func() {
				a.log.Info("keeper asks this soul to move to another keeper", "keeper", c.ep, "reason", v.Move.Reason)
				close(c.moved)
				a.serving.Add(1)
				go func() {
					defer a.serving.Done()
					a.leave(sctx, c)
				}()
			})
		case *pb.KeeperMessage_Cancel:
			a.cancelTask(v.Cancel.TaskId)
		case *pb.KeeperMessage_Health:
			a.onHealthAssignment(ctx, v.Health)
		default:
			a.log.Debug("ignoring unexpected keeper message", "type", fmt.Sprintf("%T", m.Msg))
		}
	}
}

// heartbeat sends heartbeats and soulprint changes until ctx ends; a failed
// send ends the session through cancel.
func (a *Agent) heartbeat(ctx context.Context, cancel context.CancelFunc, c *conn, every time.Duration) {
	hb := time.NewTicker(every)
	defer hb.Stop()
	facts := time.NewTicker(a.cfg.FactsInterval)
	defer facts.Stop()
	// The first vital signs within an interval of the welcome, at a random
	// point: a fleet that reconnected together does not report together.
	vitals := time.NewTimer(time.Second + rand.N(a.cfg.VitalsInterval))
	defer vitals.Stop()
	beat := &pb.SoulMessage{Msg: &pb.SoulMessage_Heartbeat{Heartbeat: &pb.Heartbeat{}}}
	for {
		var m *pb.SoulMessage
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			m = beat
		case <-vitals.C:
			vitals.Reset(a.cfg.VitalsInterval)
			vm, err := a.vitalsMsg(ctx)
			if err != nil {
				a.log.Warn("collecting vital signs", "err", err)
				continue
			}
			m = vm
		case <-facts.C:
			changed, err := a.refreshFacts()
			if err != nil {
				a.log.Warn("recollecting facts", "err", err)
				continue
			}
			if !changed {
				continue
			}
			m = &pb.SoulMessage{Msg: &pb.SoulMessage_Soulprint{Soulprint: &pb.SoulprintUpdate{Soulprint: a.soulprintJSON()}}}
		}
		if err := c.send(m); err != nil {
			a.log.Debug("sending to keeper failed", "err", err)
			cancel()
			return
		}
	}
}

// Leaving a stream after a move (see leave).
const (
	leaveCheck  = 200 * time.Millisecond // how often the soul looks whether it may leave
	leaveRepeat = 5 * time.Second        // Leaving again when the keeper had work in flight
	leaveGiveUp = 30 * time.Second       // then the soul closes the stream itself (a keeper that ignores Leaving)
)

// leave ends stream c after its keeper asked the soul to move: once the
// soul holds a stream to another keeper and no work c gave is running, it
// says Leaving, and the keeper closes c when it has no work in flight to
// the soul (else the soul says it again after leaveRepeat). Until then c
// serves on: work still sent on it runs and answers on it, so a move
// fails no run.
func (a *Agent) leave(ctx context.Context, c *conn) {
	t := time.NewTicker(leaveCheck)
	defer t.Stop()
	var first, last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		elsewhere := a.conn != nil && a.conn != c
		busy := a.runningOn(c)
		a.mu.Unlock()
		if !elsewhere || busy {
			continue
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		if now.Sub(first) > leaveGiveUp {
			a.log.Info("the keeper did not close the stream it asked this soul to leave; closing it", "keeper", c.ep)
			c.closeRequest()
			return
		}
		if now.Sub(last) >= leaveRepeat {
			last = now
			if err := c.send(&pb.SoulMessage{Msg: &pb.SoulMessage_Leaving{Leaving: &pb.Leaving{}}}); err != nil {
				return
			}
		}
	}
}

// runningOn reports whether work that stream c gave is running; a.mu
// must be held.
func (a *Agent) runningOn(c *conn) bool {
	for _, t := range a.running {
		if t.origin == c {
			return true
		}
	}
	return false
}

// runningTask is a task the soul runs, and the stream that gave it.
type runningTask struct {
	cancel context.CancelFunc
	origin *conn
}

// startTask runs one piece of work from stream origin in its own
// goroutine, owned by Run.
func (a *Agent) startTask(ctx context.Context, wm *pb.Work, origin *conn) {
	w, err := dispatch.DecodeWork(wm.Work)
	if err != nil {
		a.deliver(pendingResult{RunID: wm.RunId, TaskID: wm.TaskId, Result: failed("undecodable work: " + err.Error())}, origin)
		return
	}
	if w.TaskID == "" {
		w.TaskID, w.RunID = wm.TaskId, wm.RunId
	}
	a.mu.Lock()
	if _, dup := a.running[w.TaskID]; dup {
		a.mu.Unlock()
		a.log.Debug("ignoring work already running", "task_id", w.TaskID)
		return
	}
	tctx, cancel := context.WithCancelCause(ctx)
	a.running[w.TaskID] = runningTask{cancel: func() { cancel(errCancelledByKeeper) }, origin: origin}
	a.tasks.Add(1)
	a.mu.Unlock()
	a.log.Debug("task started", "task_id", w.TaskID, "run_id", w.RunID)

	go func() {
		defer a.tasks.Done()
		tl := slog.New(slog.NewTextHandler(&logSender{a: a, taskID: w.TaskID, origin: origin}, nil))
		sctx, span := a.executeSpan(tctx, w)
		r := a.runner.Run(WithTaskLogger(sctx, tl), w)
		endExecuteSpan(span, r)
		if err := a.record.Record(w, r, time.Now()); err != nil {
			a.log.Warn("could not record the task in the local task log", "task_id", w.TaskID, "err", err)
		}
		a.mu.Lock()
		delete(a.running, w.TaskID)
		a.mu.Unlock()
		cancel(nil)
		p := pendingResult{RunID: w.RunID, TaskID: w.TaskID, Result: r}
		if ctx.Err() != nil {
			// The soul is stopping, and its session is closing with it: the
			// keeper counts this host unreachable for the task. Sending the
			// result on the closing stream would race that close (the run
			// would see "failed" or "unreachable" by chance), so it is kept
			// and delivered after the next start, as a late result, like
			// any result finished while disconnected.
			a.log.Info("soul stopping: keeping a task's result until the next start", "task_id", w.TaskID)
			a.outbox.put(p)
			return
		}
		a.deliver(p, origin)
	}()
}

func (a *Agent) cancelTask(taskID string) {
	a.mu.Lock()
	t, ok := a.running[taskID]
	a.mu.Unlock()
	if ok {
		a.log.Info("keeper cancelled a task", "task_id", taskID)
		t.cancel()
	}
}

// deliver sends a result now — on the stream that gave the work while it
// is open (after a move, its keeper still waits for it there), else on the
// current one — or keeps it in the outbox until the next welcome when
// there is no stream (or the send fails).
func (a *Agent) deliver(p pendingResult, origin *conn) {
	a.mu.Lock()
	c := a.conn
	if origin != nil && !origin.isEnded() {
		c = origin
	}
	if c == nil {
		// Under a.mu, so a session that starts now sees it in its flush.
		a.outbox.put(p)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	if err := c.sendResult(p); err != nil {
		a.log.Info("keeping a result until the keeper is back", "task_id", p.TaskID, "err", err)
		a.outbox.put(p)
	}
}

func resultMsg(p pendingResult) *pb.SoulMessage {
	b, err := json.Marshal(p.Result)
	if err != nil {
		b, _ = json.Marshal(domain.Result{Failed: true, RC: -1, Msg: "encoding result: " + err.Error()})
	}
	return &pb.SoulMessage{Msg: &pb.SoulMessage_Result{Result: &pb.TaskResult{RunId: p.RunID, TaskId: p.TaskID, Result: b}}}
}

// logSender streams a task's log lines to the keeper, best effort: lines
// written while disconnected are dropped.
type logSender struct {
	a      *Agent
	taskID string
	origin *conn
}

func (l *logSender) Write(p []byte) (int, error) {
	l.a.mu.Lock()
	c := l.a.conn
	l.a.mu.Unlock()
	if l.origin != nil && !l.origin.isEnded() {
		c = l.origin
	}
	if c != nil {
		_ = c.send(&pb.SoulMessage{Msg: &pb.SoulMessage_Log{Log: &pb.LogLine{TaskId: l.taskID, Text: string(p)}}})
	}
	return len(p), nil
}
