package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// soulStream is one soul's connection as the handshake, onboarding and
// session see it, whichever transport carries it: the Connect route over
// HTTP/2 (connectStream) or the lean ALPN soulstack/1 connection
// (leanStream). Receive is called by one goroutine at a time, Send by
// one goroutine at a time (the session serialises its senders).
type soulStream interface {
	Send(*pb.KeeperMessage) error
	Receive() (*pb.SoulMessage, error)
	// Peer is the soul's address (host:port).
	Peer() string
	// SetReadDeadline bounds the reads to come (the handshake); the zero
	// time clears it.
	SetReadDeadline(time.Time) error
	// LiftLimit ends the handshake byte budget: from now on a message may
	// be as large as MaxSoulMessageBytes.
	LiftLimit()
	// Unblock makes pending and future reads and writes fail, so the
	// handler returns. Safe to call from any goroutine, also after the
	// handler returned.
	Unblock()
}

// connectStream is a soulStream over the Connect (gRPC, HTTP/2) route.
type connectStream struct {
	stream *connect.BidiStream[pb.SoulMessage, pb.KeeperMessage]
	ctx    context.Context
	rc     *http.ResponseController // nil when the server hides it: Unblock then cannot cut reads

	// ioMu guards rc: it must not be used once the handler returned.
	ioMu   sync.Mutex
	ioDone bool
}

func newConnectStream(ctx context.Context, stream *connect.BidiStream[pb.SoulMessage, pb.KeeperMessage]) *connectStream {
	rc, _ := ctx.Value(rcKey{}).(*http.ResponseController)
	return &connectStream{stream: stream, ctx: ctx, rc: rc}
}

func (s *connectStream) Send(m *pb.KeeperMessage) error    { return s.stream.Send(m) }
func (s *connectStream) Receive() (*pb.SoulMessage, error) { return s.stream.Receive() }
func (s *connectStream) Peer() string                      { return s.stream.Peer().Addr }
func (s *connectStream) LiftLimit()                        { liftHandshakeLimit(s.ctx) }
func (s *connectStream) SetReadDeadline(t time.Time) error {
	if s.rc == nil {
		return errNoDeadlines
	}
	return s.rc.SetReadDeadline(t)
}

func (s *connectStream) Unblock() {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if s.rc == nil || s.ioDone {
		return
	}
	now := time.Now()
	_ = s.rc.SetReadDeadline(now)
	_ = s.rc.SetWriteDeadline(now)
}

// endIO marks the handler as returning: rc is off limits from now on.
func (s *connectStream) endIO() {
	s.ioMu.Lock()
	s.ioDone = true
	s.ioMu.Unlock()
}

var errNoDeadlines = errors.New("no http.ResponseController in the request context")

// transportName names a stream's transport in logs.
func transportName(s soulStream) string {
	if _, ok := s.(*leanStream); ok {
		return "soulstack/1"
	}
	return "h2"
}
