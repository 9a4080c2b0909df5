package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// soulStream is one soul's connection as the handshake, onboarding and
// session see it, whichever transport carries it: the Connect route over
// HTTP/2 (connectStream) or the lean ALPN soulstack/1 connection
// (leanStream). Receive is called by one goroutine at a time, Send by
// one goroutine at a time (the session serialises its senders).
type soulStream interface {
	// Send writes one message within the stream's send bound; past it,
	// it fails with a stoppedReading error.
	Send(*pb.KeeperMessage) error
	Receive() (*pb.SoulMessage, error)
	// Stalled is the stoppedReading error of a send in progress past its
	// bound, else nil: when such a send also broke the reads, the
	// session's reason is the send's.
	Stalled() error
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

// sendBound is how long one send to a soul may take: base plus the
// message's size at rate bytes a second. A soul whose connection accepts
// no more (it stopped reading: broken or malicious, while its heartbeats
// still arrive) would otherwise hold its session's sender forever, and its
// queue would grow with every dispatch. The defaults (DefaultSendTimeout,
// DefaultSendRate) are generous: a minute covers TCP slow start, latency
// and a soul briefly busy, and 256 KiB/s (about 2 Mbit/s, a slow WAN or
// VPN link) still gets a destiny bundle of MaxMessageBytes through in
// about 5 minutes (60 s + 64 MiB / 256 KiB/s = 316 s). Only a soul slower
// than that for a whole message is cut.
type sendBound struct {
	base time.Duration
	rate int64 // bytes per second
}

func (g *Gateway) sendBound() sendBound {
	return sendBound{base: g.cfg.SendTimeout, rate: int64(g.cfg.SendRate)}
}

// within is the time a message of n bytes may take.
func (b sendBound) within(n int) time.Duration {
	return b.base + time.Duration(int64(n)*int64(time.Second)/b.rate)
}

// stoppedReading is a send's error when it did not complete within its
// bound: the session ends with it as its reason.
type stoppedReading struct{ d time.Duration }

func (e stoppedReading) Error() string {
	return fmt.Sprintf("the soul stopped reading: a send did not complete within %s", e.d)
}

// connectStream is a soulStream over the Connect (gRPC, HTTP/2) route.
type connectStream struct {
	stream *connect.BidiStream[pb.SoulMessage, pb.KeeperMessage]
	ctx    context.Context
	rc     *http.ResponseController // nil when the server hides it: Unblock then cannot cut reads
	bound  sendBound
	// sendBy is the deadline of the send in progress or failed (unix
	// nanos; 0: none), sendFor its bound.
	sendBy, sendFor atomic.Int64

	// ioMu guards rc: it must not be used once the handler returned, and
	// a send's deadline must not undo Unblock's.
	ioMu      sync.Mutex
	ioDone    bool
	unblocked bool
}

func newConnectStream(ctx context.Context, stream *connect.BidiStream[pb.SoulMessage, pb.KeeperMessage], bound sendBound) *connectStream {
	rc, _ := ctx.Value(rcKey{}).(*http.ResponseController)
	return &connectStream{stream: stream, ctx: ctx, rc: rc, bound: bound}
}

// Send sends m within the send bound of its (uncompressed) size. Without
// a ResponseController the send is unbounded (the handshake warned).
func (s *connectStream) Send(m *pb.KeeperMessage) error {
	d := s.bound.within(proto.Size(m))
	start := time.Now()
	if !s.setWriteDeadline(start.Add(d)) {
		return s.stream.Send(m)
	}
	s.sendFor.Store(int64(d))
	s.sendBy.Store(start.Add(d).UnixNano())
	err := s.stream.Send(m)
	if err == nil {
		s.sendBy.Store(0)
	}
	// An HTTP/2 write deadline resets the stream when it passes, even
	// between writes: clear it.
	cleared := s.setWriteDeadline(time.Time{})
	if err != nil && cleared && time.Since(start) >= d {
		return stoppedReading{d}
	}
	return err
}

// Stalled: the write deadline resets the HTTP/2 stream, so the reader
// fails too, often before Send returns.
func (s *connectStream) Stalled() error {
	by := s.sendBy.Load()
	if by == 0 || time.Now().UnixNano() < by {
		return nil
	}
	return stoppedReading{time.Duration(s.sendFor.Load())}
}

// setWriteDeadline sets the write deadline unless rc is missing or off
// limits or Unblock ran (its deadline stands); it reports whether it did.
func (s *connectStream) setWriteDeadline(t time.Time) bool {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if s.rc == nil || s.ioDone || s.unblocked {
		return false
	}
	return s.rc.SetWriteDeadline(t) == nil
}

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
	s.unblocked = true
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

type rcKey struct{}

type bodyKey struct{}

// handshakeBody is the request body of a soul stream: until lift is called
// (the soul was accepted) reads stop with an error after MaxHandshakeBytes.
type handshakeBody struct {
	io.ReadCloser
	left   atomic.Int64
	lifted atomic.Bool
}

var errHandshakeTooLarge = fmt.Errorf("the handshake is larger than %d bytes", MaxHandshakeBytes)

func (b *handshakeBody) Read(p []byte) (int, error) {
	if b.lifted.Load() {
		return b.ReadCloser.Read(p)
	}
	left := b.left.Load()
	if left <= 0 {
		return 0, errHandshakeTooLarge
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left.Add(-int64(n))
	return n, err
}

// liftHandshakeLimit ends the handshake budget of the stream ctx belongs to.
func liftHandshakeLimit(ctx context.Context) {
	if b, ok := ctx.Value(bodyKey{}).(*handshakeBody); ok {
		b.lifted.Store(true)
	}
}

// compressedRequest reports whether the request's messages may be
// compressed (gRPC and Connect streaming headers).
func compressedRequest(h http.Header) bool {
	for _, k := range []string{"Grpc-Encoding", "Connect-Content-Encoding", "Content-Encoding"} {
		if v := h.Get(k); v != "" && !strings.EqualFold(v, "identity") {
			return true
		}
	}
	return false
}
