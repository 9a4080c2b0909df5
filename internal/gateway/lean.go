package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/soulwire"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// The lean soul stream (SPEC §3, issue 23): a soul that offers the ALPN
// protocol soulwire.Proto gets gRPC-Web framed protobuf messages directly
// over its TLS connection. The net/http connection goroutine that hands
// the connection over is the stream's reader — the only goroutine an idle
// soul costs — and the connection keeps no buffered reader or writer:
// frames are read into and written from pooled buffers.

// EnableLean makes srv hand connections that negotiated soulwire.Proto to
// the gateway and tlsCfg (the listener's TLS configuration) offer that
// protocol first, before "h2" and "http/1.1" (browsers and API clients
// never offer it, so only souls choose it). Call it before srv serves; it
// keeps net/http's own HTTP/2 (no "h2" entry is added to TLSNextProto):
// a server without Protocols gets HTTP/1.1 and HTTP/2 set explicitly, as
// net/http turns HTTP/2 off for a non-nil TLSNextProto otherwise.
func (g *Gateway) EnableLean(srv *http.Server, tlsCfg *tls.Config) {
	if srv.Protocols == nil {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
	}
	if srv.TLSNextProto == nil {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	srv.TLSNextProto[soulwire.Proto] = g.ServeLean
	if tlsCfg != nil && !slices.Contains(tlsCfg.NextProtos, soulwire.Proto) {
		tlsCfg.NextProtos = append([]string{soulwire.Proto}, tlsCfg.NextProtos...)
	}
}

// ServeLean runs one lean soul stream on c, a TLS connection whose
// handshake negotiated soulwire.Proto (an http.Server TLSNextProto
// function). It returns when the stream ended; the caller closes c.
func (g *Gateway) ServeLean(_ *http.Server, c *tls.Conn, _ http.Handler) {
	st := &leanStream{c: c, left: MaxHandshakeBytes, max: g.cfg.MaxSoulMessageBytes, bound: g.sendBound()}
	if !g.trackLean(st, true) {
		st.finish(connect.NewError(connect.CodeUnavailable, errStopping))
		return
	}
	defer g.recoverLean(st)
	err := g.serveStream(context.Background(), st)
	g.trackLean(st, false)
	st.finish(err)
}

// recoverLean logs a panic of a lean stream's handler (as api.Recover
// does for the Connect route) and ends the stream with an internal error.
func (g *Gateway) recoverLean(st *leanStream) {
	p := recover()
	if p == nil {
		return
	}
	g.log.Error("panic serving a lean soul stream", "peer", st.Peer(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	g.trackLean(st, false)
	st.finish(connect.NewError(connect.CodeInternal, errors.New("internal error")))
}

// trackLean adds (or removes) a lean stream to the set Run's end aborts;
// adding fails once the gateway is stopping.
func (g *Gateway) trackLean(st *leanStream, add bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !add {
		delete(g.lean, st)
		return true
	}
	if g.stopping {
		return false
	}
	if g.lean == nil {
		g.lean = map[*leanStream]struct{}{}
	}
	g.lean[st] = struct{}{}
	return true
}

// abortLean unblocks every lean stream (those still in their handshake
// too). g.mu must be held.
func (g *Gateway) abortLeanLocked() {
	for st := range g.lean {
		st.Unblock()
	}
}

// leanStream is a soulStream over a TLS connection that negotiated
// soulwire.Proto. Receive runs on the connection's goroutine; Send is
// serialised by the session, and wmu orders it with the pongs Receive
// writes.
type leanStream struct {
	c    *tls.Conn
	hdr  [soulwire.HeaderLen]byte
	left int64 // the handshake budget; < 0 once lifted
	max  int   // the message limit once lifted

	bound   sendBound
	wmu     sync.Mutex
	aborted atomic.Bool
}

// errLeanCompressed is the answer to a compressed soul frame.
var errLeanCompressed = connect.NewError(connect.CodeInvalidArgument, errors.New("the soul stream takes uncompressed messages"))

// Receive reads the next message, answering pings on the way. An idle
// soul's reader waits here: the work is in frame, so that the frames on
// the waiting stack stay small (an 8 KiB stack per soul instead of 16).
func (s *leanStream) Receive() (*pb.SoulMessage, error) {
	for {
		flag, n, err := soulwire.ReadHeader(s.c, &s.hdr)
		if err != nil {
			return nil, s.readErr(err)
		}
		if m, err := s.frame(flag, n); m != nil || err != nil {
			return m, err
		}
	}
}

// frame reads the payload of a frame whose header was read: a message,
// or nil for a control frame it handled (a ping is answered).
func (s *leanStream) frame(flag byte, n int) (*pb.SoulMessage, error) {
	limit := s.max
	if s.left >= 0 {
		s.left -= soulwire.HeaderLen + int64(n)
		if s.left < 0 {
			return nil, connect.NewError(connect.CodeResourceExhausted, errHandshakeTooLarge)
		}
		limit = n
	}
	switch flag {
	case soulwire.FlagCompressed:
		return nil, errLeanCompressed
	case soulwire.FlagTrailer:
		return nil, io.EOF // the soul ended its side
	}
	if n > limit {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("message size %d is larger than configured max %d", n, limit))
	}
	p := soulwire.GetBuf(n)
	defer soulwire.PutBuf(p)
	if _, err := io.ReadFull(s.c, *p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, s.readErr(err)
	}
	switch flag {
	case soulwire.FlagPing:
		return nil, s.writeControl(soulwire.FlagPong, *p) // echoes the ping's payload
	case soulwire.FlagPong:
		return nil, nil
	}
	m := new(pb.SoulMessage)
	if err := soulwire.Unmarshal(flag, *p, m, limit, false); err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return m, nil
}

func (s *leanStream) readErr(err error) error {
	switch {
	case errors.Is(err, soulwire.ErrBadFlag), errors.Is(err, soulwire.ErrFrameTooLarge):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, io.EOF):
		return io.EOF
	}
	return fmt.Errorf("reading the soul stream: %w", err)
}

// writeControl writes a ping or pong frame with payload (PingLen bytes).
func (s *leanStream) writeControl(flag byte, payload []byte) error {
	b := soulwire.ControlFrame(flag, payload)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.write(b[:], "answering a ping")
}

// write writes b within the send bound of its size; wmu must be held.
func (s *leanStream) write(b []byte, what string) error {
	d := s.bound.within(len(b))
	if !s.aborted.Load() {
		_ = s.c.SetWriteDeadline(time.Now().Add(d))
		if s.aborted.Load() { // Unblock ran meanwhile: its deadline stands
			_ = s.c.SetWriteDeadline(time.Now())
		}
	}
	if _, err := s.c.Write(b); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && !s.aborted.Load() {
			return stoppedReading{d}
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Send writes m as one frame (gzip-compressed from 4 KiB, as the Connect
// route does) within the send bound of the frame's size.
func (s *leanStream) Send(m *pb.KeeperMessage) error {
	p, err := soulwire.MarshalFrame(m, MaxMessageBytes, soulwire.CompressMinBytes)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	err = s.write(*p, "writing to the soul stream")
	s.wmu.Unlock()
	soulwire.PutBuf(p)
	return err
}

// Stalled is nil: a lean write deadline does not break the reads, and
// Send reports its own.
func (s *leanStream) Stalled() error { return nil }

func (s *leanStream) Peer() string { return s.c.RemoteAddr().String() }

func (s *leanStream) SetReadDeadline(t time.Time) error {
	if s.aborted.Load() {
		return nil
	}
	err := s.c.SetReadDeadline(t)
	if s.aborted.Load() { // Unblock ran meanwhile: its deadline stands
		_ = s.c.SetReadDeadline(time.Now())
	}
	return err
}

func (s *leanStream) LiftLimit() { s.left = -1 }

func (s *leanStream) Unblock() {
	s.aborted.Store(true)
	_ = s.c.SetDeadline(time.Now())
}

// lingerBytes and lingerTime bound what finish reads after the last frame
// so that closing the connection does not reset it before the soul read
// that frame (unread input makes close send a TCP reset).
const (
	lingerBytes = 64 << 10
	lingerTime  = time.Second
)

// finish ends the stream with err's status (the trailer frame), unless it
// was aborted, and lets the soul read it before the connection closes.
func (s *leanStream) finish(err error) {
	if s.aborted.Load() {
		return
	}
	_ = s.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	s.wmu.Lock()
	_, werr := s.c.Write(soulwire.Trailer(err))
	s.wmu.Unlock()
	if werr != nil || s.aborted.Load() {
		return
	}
	_ = s.c.CloseWrite()
	_ = s.c.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, s.c, lingerBytes)
}
