package soul

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/soulwire"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// Defaults of the lean stream's liveness probe (Config.PingAfter,
// Config.PingTimeout). The HTTP/2 route pinged after 30 s and waited 15 s
// for the answer; on a starved machine (a keeper at full CPU holding
// thousands of souls) 15 s was too short and made souls drop in masses, so
// the answer may take as long as the silence before the ping: a dead
// keeper is noticed within a minute.
const (
	DefaultPingAfter   = 30 * time.Second
	DefaultPingTimeout = 30 * time.Second
)

// clientStream is the soul's side of its stream, whichever transport
// carries it: the lean soulstack/1 connection (leanClient) or the Connect
// route over HTTP/2 (connect.BidiStreamForClient).
type clientStream interface {
	Send(*pb.SoulMessage) error
	Receive() (*pb.KeeperMessage, error)
	// CloseRequest ends the soul's side; a Receive blocked on it fails.
	CloseRequest() error
	CloseResponse() error
}

// openStream opens the session's stream to keeper ep: the lean one when
// the keeper negotiates soulwire.Proto, else (an older keeper, or the lean
// route turned off) the Connect route over HTTP/2.
func (a *Agent) openStream(ctx context.Context, ep endpoint) (clientStream, error) {
	raw, err := a.dialer.DialContext(ctx, "tcp", ep.addr)
	if err != nil {
		return nil, fmt.Errorf("dialling keeper %s: %w", ep, err)
	}
	tc := tls.Client(raw, ep.t.tls)
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("TLS handshake with keeper %s: %w", ep, err)
	}
	if tc.ConnectionState().NegotiatedProtocol != soulwire.Proto {
		_ = tc.Close()
		return a.clients.get(ep, a.trust.tls).Connect(ctx), nil
	}
	after, wait := a.cfg.PingAfter, a.cfg.PingTimeout
	return &leanClient{c: tc, pingAfter: after, pingWait: wait}, nil
}

// leanClient is a clientStream over a TLS connection that negotiated
// soulwire.Proto. Receive pings a keeper silent for pingAfter and fails
// when nothing arrives within pingWait after that.
type leanClient struct {
	c         *tls.Conn
	hdr       [soulwire.HeaderLen]byte
	pingAfter time.Duration
	pingWait  time.Duration
	pinged    bool

	wmu    sync.Mutex
	closed sync.Once
}

// errKeeperSilent ends a lean stream whose keeper did not answer a ping.
var errKeeperSilent = errors.New("the keeper did not answer a ping")

func (l *leanClient) Send(m *pb.SoulMessage) error {
	p, err := soulwire.MarshalFrame(m, maxMessageBytes, 0)
	if err != nil {
		return err
	}
	l.wmu.Lock()
	_, err = l.c.Write(*p)
	l.wmu.Unlock()
	soulwire.PutBuf(p)
	if err != nil {
		// As the Connect client: a broken stream is io.EOF to Send, and
		// Receive tells why.
		return fmt.Errorf("%w (writing to the keeper: %v)", io.EOF, err)
	}
	return nil
}

// Receive reads the next keeper message: io.EOF when the keeper ended the
// stream with status OK, a *connect.Error with its code and message when
// it ended it with an error.
func (l *leanClient) Receive() (*pb.KeeperMessage, error) {
	for {
		_ = l.c.SetReadDeadline(time.Now().Add(l.pingAfter))
		if err := l.read(l.hdr[:]); err != nil {
			return nil, err
		}
		flag, n, err := soulwire.ParseHeader(&l.hdr)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("reading from keeper: %w", err))
		}
		if n > maxMessageBytes {
			return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("message size %d is larger than configured max %d", n, maxMessageBytes))
		}
		p := soulwire.GetBuf(n)
		if err := l.read(*p); err != nil {
			soulwire.PutBuf(p)
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch flag {
		case soulwire.FlagPing:
			err := l.control(soulwire.FlagPong, *p)
			soulwire.PutBuf(p)
			if err != nil {
				return nil, err
			}
			continue
		case soulwire.FlagPong:
			soulwire.PutBuf(p)
			continue
		case soulwire.FlagTrailer:
			err := soulwire.ParseTrailer(*p)
			soulwire.PutBuf(p)
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		m := new(pb.KeeperMessage)
		err = soulwire.Unmarshal(flag, *p, m, maxMessageBytes, true)
		soulwire.PutBuf(p)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		return m, nil
	}
}

// read fills b. A read that times out (nothing for pingAfter) sends a
// ping; a second timeout (nothing for pingWait after it) is
// errKeeperSilent. Any data arriving restarts the wait.
func (l *leanClient) read(b []byte) error {
	for n := 0; n < len(b); {
		m, err := l.c.Read(b[n:])
		n += m
		if m > 0 && l.pinged {
			l.pinged = false
			_ = l.c.SetReadDeadline(time.Now().Add(l.pingAfter))
		}
		if err == nil {
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			if errors.Is(err, io.EOF) && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("receiving from keeper: %w", err)
		}
		if l.pinged {
			return fmt.Errorf("receiving from keeper: %w within %s", errKeeperSilent, l.pingWait)
		}
		l.pinged = true
		var payload [soulwire.PingLen]byte
		if err := l.control(soulwire.FlagPing, payload[:]); err != nil {
			return err
		}
		_ = l.c.SetReadDeadline(time.Now().Add(l.pingWait))
	}
	return nil
}

func (l *leanClient) control(flag byte, payload []byte) error {
	b := soulwire.ControlFrame(flag, payload)
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_ = l.c.SetWriteDeadline(time.Now().Add(l.pingWait))
	_, err := l.c.Write(b[:])
	_ = l.c.SetWriteDeadline(time.Time{})
	if err != nil {
		what := "ping"
		if flag == soulwire.FlagPong {
			what = "pong"
		}
		return fmt.Errorf("sending a %s to the keeper: %w", what, err)
	}
	return nil
}

// CloseRequest closes the connection: the keeper sees the soul leave, and
// a blocked Receive returns.
func (l *leanClient) CloseRequest() error {
	l.closed.Do(func() { _ = l.c.Close() })
	return nil
}

// CloseResponse is CloseRequest.
func (l *leanClient) CloseResponse() error { return l.CloseRequest() }
