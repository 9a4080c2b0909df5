package gateway

import (
	"context"
	"math/rand/v2"
	"time"

	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// A keeper of a fleet can shed souls (SPEC §17, keeper fleet): it asks
// them to move (Move), and each one connects to another of its keepers,
// finishes the work this keeper gave it, and says Leaving; the keeper then
// lets it go when no work to it is in flight. A drained keeper also
// refuses new souls as busy, with a retry-after, as a keeper over its soul
// budget (MaxSouls) does.

// Defaults of the balancing options of Config.
const (
	// DefaultBusyRetry is the retry-after told to souls refused as busy
	// (plus up to as much again at random, so they do not come back
	// together).
	DefaultBusyRetry = 10 * time.Second
	// DefaultMoveRate is how many souls a second a keeper asks to move.
	DefaultMoveRate = 1000
	// drainRetry is the retry-after of a drained keeper's refusals: it is
	// going away for maintenance.
	drainRetry = time.Minute
)

// SetDraining turns the drain on (or off): a draining keeper refuses new
// souls as busy. Move asks the connected ones to leave.
func (g *Gateway) SetDraining(on bool) { g.draining.Store(on) }

// Draining reports whether the keeper refuses new souls for a drain.
func (g *Gateway) Draining() bool { return g.draining.Load() }

// busy reports whether a new soul must be refused as busy, with the
// retry-after to tell it and why.
func (g *Gateway) busy() (bool, time.Duration, string) {
	if g.draining.Load() {
		return true, drainRetry + rand.N(drainRetry/2), "the keeper is being drained"
	}
	if g.cfg.MaxSouls <= 0 {
		return false, 0, ""
	}
	g.mu.RLock()
	n := len(g.sessions)
	g.mu.RUnlock()
	if n < g.cfg.MaxSouls {
		return false, 0, ""
	}
	return true, g.cfg.BusyRetry + rand.N(g.cfg.BusyRetry+1), "the keeper holds as many souls as its budget allows"
}

func busyMsg(retry time.Duration, why string) *pb.KeeperMessage {
	return &pb.KeeperMessage{Msg: &pb.KeeperMessage_Rejected{Rejected: &pb.Rejected{
		Reason: pb.Rejected_REASON_BUSY, Message: why, RetryAfterMs: retry.Milliseconds(),
	}}}
}

// Move asks up to n of the connected souls (n <= 0: all of them) to move
// to other keepers, at most MoveRate a second, and returns how many it
// asked. Souls already asked are not asked again.
func (g *Gateway) Move(ctx context.Context, n int, reason string) int {
	var todo []*session
	for _, s := range g.snapshot() {
		if n > 0 && len(todo) >= n {
			break
		}
		if !s.moveAsked.Swap(true) {
			todo = append(todo, s)
		}
	}
	const tick = 100 * time.Millisecond
	per := max(1, g.cfg.MoveRate/10)
	t := time.NewTicker(tick)
	defer t.Stop()
	asked := 0
	msg := &pb.KeeperMessage{Msg: &pb.KeeperMessage_Move{Move: &pb.Move{Reason: reason}}}
	for i, s := range todo {
		if i > 0 && i%per == 0 {
			select {
			case <-ctx.Done():
				for _, rest := range todo[i:] {
					rest.moveAsked.Store(false)
				}
				return asked
			case <-t.C:
			}
		}
		if s.enqueue(msg) {
			asked++
		}
	}
	if asked > 0 {
		g.log.Info("asked souls to move to other keepers", "souls", asked, "reason", reason)
	}
	return asked
}

// leaving lets a soul that was asked to move go, when no work to it is in
// flight: it holds a stream to another keeper, which the store shows
// holding it, so this keeper forgets the session at once (work for it is
// routed there) and closes the stream without recording it disconnected.
// With work in flight the soul says Leaving again later.
func (s *session) leaving() {
	g := s.g
	if !s.moveAsked.Load() {
		return // not asked: a confused soul; its stream stays
	}
	l := g.sidLock(s.sid)
	l.Lock()
	defer l.Unlock()
	s.mu.Lock()
	if s.closed || len(s.waiters) > 0 || len(s.queue) > 0 {
		s.mu.Unlock()
		return
	}
	s.closed, s.reason = true, "moved to another keeper"
	s.mu.Unlock()
	g.mu.Lock()
	if g.sessions[s.sid] == s {
		delete(g.sessions, s.sid)
	}
	g.mu.Unlock()
	// Only if the store still shows it here (it should not).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.cfg.Store.MarkSoulDisconnected(ctx, s.sid, g.cfg.KeeperID, time.Unix(0, s.lastSeen.Load())); err != nil {
		g.log.Warn("recording a moved soul gone", "sid", s.sid, "err", err)
	}
	s.stream.Unblock()
}
