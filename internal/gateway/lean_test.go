package gateway_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/soulwire"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// dialLean opens a lean soulstack/1 connection to k, as a soul of this
// release does, and fails the test when the keeper does not negotiate it.
func dialLean(t *testing.T, k *keeper) *rawSoul {
	t.Helper()
	c := dialLeanConn(t, k)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &rawSoul{t: t, k: k, key: key, stream: &leanRaw{c: c}}
}

func dialLeanConn(t *testing.T, k *keeper) *tls.Conn {
	t.Helper()
	cfg, err := tlsutil.PinnedClientConfig(k.fp)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{soulwire.Proto, "h2"}
	c, err := tls.Dial("tcp", k.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != soulwire.Proto {
		t.Fatalf("the keeper negotiated %q, want %q", p, soulwire.Proto)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// leanRaw is a test soul's side of a lean stream, written against the
// wire format alone (not the soul package's client).
type leanRaw struct {
	c   *tls.Conn
	hdr [soulwire.HeaderLen]byte
}

func (l *leanRaw) Send(m *pb.SoulMessage) error {
	p, err := soulwire.MarshalFrame(m, gateway.MaxMessageBytes, 0)
	if err != nil {
		return err
	}
	defer soulwire.PutBuf(p)
	_, err = l.c.Write(*p)
	return err
}

// Receive returns the next message, io.EOF for a trailer with status OK,
// or the trailer's *connect.Error.
func (l *leanRaw) Receive() (*pb.KeeperMessage, error) {
	for {
		flag, p, err := soulwire.ReadFrame(l.c, &l.hdr, gateway.MaxMessageBytes)
		if err != nil {
			return nil, err
		}
		switch flag {
		case soulwire.FlagTrailer:
			err := soulwire.ParseTrailer(*p)
			if err == nil {
				err = io.EOF
			}
			return nil, err
		case soulwire.FlagPing, soulwire.FlagPong:
			continue
		}
		m := new(pb.KeeperMessage)
		if err := soulwire.Unmarshal(flag, *p, m, gateway.MaxMessageBytes, true); err != nil {
			return nil, err
		}
		return m, nil
	}
}

func (l *leanRaw) CloseRequest() error  { return l.c.Close() }
func (l *leanRaw) CloseResponse() error { return l.c.Close() }

// frame builds a raw frame: flag, a length field and payload.
func frame(flag byte, length uint32, payload []byte) []byte {
	b := make([]byte, soulwire.HeaderLen, soulwire.HeaderLen+len(payload))
	b[0] = flag
	binary.BigEndian.PutUint32(b[1:], length)
	return append(b, payload...)
}

// leanHandlers counts the goroutines serving lean connections.
func leanHandlers() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "gateway.(*Gateway).ServeLean(")
}

// wantCode asserts err is a stream end with code whose message holds msg.
func wantCode(t *testing.T, what string, err error, code connect.Code, msg string) {
	t.Helper()
	if connect.CodeOf(err) != code || !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: %v, want %s containing %q", what, err, code, msg)
	}
}

// Malformed lean frames end the stream with a clear status, before the
// keeper allocates what a length field claims; nothing stays behind.
func TestLeanFramingErrors(t *testing.T) {
	dir := t.TempDir()
	// Every bad stream is a failed hello (L1): a budget for all of them.
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{maxSoulMessage: 256 << 10, helloBurst: 100})
	cases := []struct {
		name string
		send []byte
		code connect.Code
		msg  string
	}{
		// A 1 GiB hello: refused from its header, nothing allocated.
		{"oversized before accept", frame(soulwire.FlagMessage, 1<<30, nil), connect.CodeResourceExhausted, "handshake is larger than"},
		{"compressed", frame(soulwire.FlagCompressed, 3, []byte{1, 2, 3}), connect.CodeInvalidArgument, "uncompressed"},
		{"garbage flag", frame(0x7f, 0, nil), connect.CodeInvalidArgument, "unknown frame flag 0x7f"},
		{"bad ping", frame(soulwire.FlagPing, 3, []byte{1, 2, 3}), connect.CodeInvalidArgument, "ping or pong frame of 3 bytes"},
		{"not protobuf", frame(soulwire.FlagMessage, 4, []byte{0xff, 0xff, 0xff, 0xff}), connect.CodeInvalidArgument, "decoding"},
		{"no hello", frame(soulwire.FlagMessage, 0, nil), connect.CodeInvalidArgument, "the first message must be hello"},
	}
	for _, tc := range cases {
		l := dialLean(t, k).stream.(*leanRaw)
		if _, err := l.c.Write(tc.send); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var err error
		for err == nil { // a protocol rejection comes first, then the status
			_, err = l.Receive()
		}
		wantCode(t, tc.name, err, tc.code, tc.msg)
	}

	// A ping is answered before the hello, with its payload.
	l := dialLean(t, k).stream.(*leanRaw)
	if _, err := l.c.Write(frame(soulwire.FlagPing, 8, []byte("12345678"))); err != nil {
		t.Fatal(err)
	}
	if flag, p, err := soulwire.ReadFrame(l.c, &l.hdr, 64); err != nil || flag != soulwire.FlagPong || string(*p) != "12345678" {
		t.Fatalf("answer to a ping: 0x%02x %v", flag, err)
	}
	_ = l.c.Close()

	// A truncated frame and a closed connection: the handler ends.
	l = dialLean(t, k).stream.(*leanRaw)
	if _, err := l.c.Write(frame(soulwire.FlagMessage, 100, []byte("short"))); err != nil {
		t.Fatal(err)
	}
	_ = l.c.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return leanHandlers() == 0 }, "every lean handler gone")

	// After the welcome, a message beyond MaxSoulMessageBytes ends the
	// session on its length field.
	r := dialLean(t, k)
	if m, err := r.handshake("framed", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("handshake: %v %v", m, err)
	}
	k.waitConnected(t, "framed")
	l = r.stream.(*leanRaw)
	if _, err := l.c.Write(frame(soulwire.FlagMessage, 300<<10, nil)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return !k.gw.Connected("framed") }, "the session ended by an oversized frame")
	testutil.WaitFor(t, 10*time.Second, func() bool { return leanHandlers() == 0 }, "every lean handler gone")
}

// The same keeper serves souls on both transports: a soul of this release
// takes the lean stream, a Connect client over HTTP/2 (an older soul, any
// gRPC client) the Connect route; and a keeper with the lean stream off
// leaves a soul of this release on HTTP/2.
func TestLeanAndConnectSideBySide(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	tok := k.joinToken(t, "web")
	for _, c := range []struct {
		sid  string
		dial func(*testing.T, *keeper) *rawSoul
	}{{"over-lean", dialLean}, {"over-h2", func(t *testing.T, k *keeper) *rawSoul { return dialRaw(t, k) }}} {
		if m, err := c.dial(t, k).handshake(c.sid, nil, tok); err != nil || m.GetWelcome() == nil {
			t.Fatalf("%s: %v %v", c.sid, m, err)
		}
	}
	k.waitConnected(t, "over-lean", "over-h2")
	runAgent(t, soulConfig(k, "agent-lean", filepath.Join(dir, "agent-lean"), tok))
	k.waitConnected(t, "agent-lean")
	res := k.gw.Dispatch(context.Background(), calls([]string{"over-lean", "agent-lean"}, "ping", "core.test.ping", nil, 10*time.Second), nil)
	if r := res["agent-lean"]; r.Failed || r.Unreachable {
		t.Fatalf("ping over the lean stream: %+v", r)
	}
	for _, sid := range []string{"over-lean", "over-h2", "agent-lean"} {
		line := k.connectedLine(t, sid)
		tr := "transport=soulstack/1"
		if strings.Contains(sid, "h2") {
			tr = "transport=h2"
		}
		if !strings.Contains(line, tr) {
			t.Fatalf("%s connected over %q, want %s", sid, line, tr)
		}
	}

	old := startKeeper(t, filepath.Join(dir, "old"), keeperOpts{noLean: true})
	runAgent(t, soulConfig(old, "agent-h2", filepath.Join(dir, "agent-h2"), old.joinToken(t, "web")))
	old.waitConnected(t, "agent-h2")
	if line := old.connectedLine(t, "agent-h2"); !strings.Contains(line, "transport=h2") {
		t.Fatalf("a soul of a keeper without the lean stream connected over %q", line)
	}
	res = old.gw.Dispatch(context.Background(), calls([]string{"agent-h2"}, "ping", "core.test.ping", nil, 10*time.Second), nil)
	if r := res["agent-h2"]; r.Failed || r.Unreachable {
		t.Fatalf("ping over the HTTP/2 fallback: %+v", r)
	}
}

// logLine is the first line of logs holding all of parts.
// connectedLine waits for the keeper's "soul connected" line of sid (it is
// logged just after the soul counts as connected) and returns it.
func (k *keeper) connectedLine(t testing.TB, sid string) string {
	t.Helper()
	var line string
	testutil.WaitFor(t, 5*time.Second, func() bool {
		line = logLine(k.logs.String(), "sid="+sid+" peer=", "soul connected")
		return line != ""
	}, "the keeper to log soul %s connected", sid)
	return line
}

func logLine(logs string, parts ...string) string {
	for _, line := range strings.Split(logs, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}

// A keeper shutting down closes lean connections — sessions and those
// still in their handshake — and its HTTP server's graceful shutdown does
// not wait for them.
func TestLeanKeeperShutdown(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	tok := k.joinToken(t)
	var sids []string
	for _, sid := range []string{"down-a", "down-b"} {
		runAgent(t, soulConfig(k, sid, filepath.Join(dir, sid), tok))
		sids = append(sids, sid)
	}
	k.waitConnected(t, sids...)
	silent := dialLeanConn(t, k) // says nothing: still in its handshake
	testutil.WaitFor(t, 10*time.Second, func() bool { return leanHandlers() == 3 }, "3 lean handlers")

	start := time.Now()
	k.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.srv.Shutdown(ctx); err != nil {
		t.Fatalf("graceful shutdown with lean souls connected: %v", err)
	}
	k.stop()
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Fatalf("the connection in its handshake after shutdown: %v", err)
	}
	if n := leanHandlers(); n != 0 {
		t.Fatalf("%d lean handlers after shutdown", n)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// TestLeanOneGoroutinePerSoul: a connected lean soul costs the keeper one
// goroutine (its reader), where the HTTP/2 route costs three.
func TestLeanOneGoroutinePerSoul(t *testing.T) {
	const n = 40
	for _, c := range []struct {
		name     string
		noLean   bool
		min, max float64
	}{{"lean", false, 0.9, 1.25}, {"h2", true, 2.5, 4}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{heartbeat: 10 * time.Second, noLean: c.noLean, quiet: true})
			settle := func() int {
				runtime.GC()
				time.Sleep(200 * time.Millisecond)
				return runtime.NumGoroutine()
			}
			g0 := settle()
			stop := startSwarm(t, k, n, filepath.Join(dir, "swarm"))
			defer stop()
			testutil.WaitFor(t, time.Minute, func() bool { return len(k.gw.ConnectedSIDs()) == n }, "%d souls connected", n)
			var per float64
			testutil.WaitFor(t, 10*time.Second, func() bool {
				per = float64(settle()-g0) / n
				return per >= c.min && per <= c.max
			}, "keeper goroutines per soul in [%.2f, %.2f]", c.min, c.max)
			t.Logf("%s: %.2f keeper goroutines per connected soul", c.name, per)
		})
	}
}

// soulConfig is an in-process agent's configuration against k.
func soulConfig(k *keeper, sid, dir, token string) soul.Config {
	return soul.Config{KeeperURL: k.url, SID: sid, DataDir: dir, JoinToken: token}
}

// startSwarm runs `soul swarm` with n souls against k; stop ends it.
func startSwarm(t *testing.T, k *keeper, n int, dir string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, soulBin, "swarm", "--keeper", k.url, "--count", strconv.Itoa(n),
		"--data-dir", dir, "--sid-prefix", "swarm", "--reconnect-min", "100ms", "--reconnect-max", "2s")
	cmd.Env = append(os.Environ(), "SOUL_JOIN_TOKEN="+k.joinToken(t))
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("swarm output:\n%s", out)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// freezeProxy forwards TCP connections to a keeper until freeze: from then
// on the connections it holds forward nothing (as a keeper process that
// hangs, or a network path that black-holes), while new ones work.
type freezeProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen chan struct{} // closed by freeze; one per generation
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, frozen: make(chan struct{})}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		close(done)
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			frozen := p.frozen
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				defer dst.Close()
				defer src.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					select {
					case <-frozen: // hold the bytes and the connection until the test ends
						<-done
						return
					default:
					}
					if n > 0 {
						if _, werr := dst.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}
			wg.Add(2)
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return p
}

// freeze stops the connections open now.
func (p *freezeProxy) freeze() {
	p.mu.Lock()
	close(p.frozen)
	p.frozen = make(chan struct{})
	p.mu.Unlock()
}

// A soul on the lean stream pings a silent keeper and gives the stream up
// when no answer comes within its bound, then connects again.
func TestLeanPingNoticesSilentKeeper(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{heartbeat: 10 * time.Second})
	proxy := startFreezeProxy(t, k.addr)
	logs := &testutil.Buffer{}
	cfg := soulConfig(k, "pinger", filepath.Join(dir, "pinger"), k.joinToken(t))
	cfg.KeeperURL = "https://" + proxy.ln.Addr().String()
	cfg.Fingerprint = k.fp
	cfg.PingAfter, cfg.PingTimeout = 300*time.Millisecond, 700*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runAgent(t, cfg)
	k.waitConnected(t, "pinger")
	// Pings keep an idle, healthy stream up.
	time.Sleep(time.Second)
	if n := strings.Count(logs.String(), "connected to keeper"); n != 1 {
		t.Fatalf("%d connections while the keeper answered pings; logs:\n%s", n, logs)
	}

	frozen := time.Now()
	proxy.freeze()
	testutil.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "did not answer a ping") }, "the soul to give up the silent stream")
	// Within the bound (ping after 300 ms, answer within 700 ms), with
	// room for a loaded machine; the keeper's own rule (three missed
	// heartbeats of 10 s) would take 30 s.
	if d := time.Since(frozen); d > 5*time.Second {
		t.Fatalf("the soul noticed the silent keeper after %s", d)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return strings.Count(logs.String(), "connected to keeper") == 2 }, "the soul back on a new connection")
	testutil.WaitFor(t, 10*time.Second, func() bool { return k.gw.Connected("pinger") }, "the soul connected")
}

// TestLeanReaderStackIsSmall: an idle lean soul's reader waits on a small
// stack — 8 KiB, not 16: the frames between the net/http connection
// goroutine and the read are kept small (the session's work is in
// functions that return before it waits again). A frame grown past that
// budget doubles every connected soul's stack; this test says so.
//
// The race detector's instrumentation makes frames larger than the
// product's: scripts/test.sh runs this test once more without it. The
// margin is small (measured with Go 1.26: 128 more bytes of frames on
// the waiting path still fit, 256 do not), most of it taken by net/http's
// connection goroutine and crypto/tls.
func TestLeanReaderStackIsSmall(t *testing.T) {
	if raceEnabled {
		t.Skip("stack sizes are those of the race detector's build; scripts/test.sh runs this test without -race")
	}
	const n = 200
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{quiet: true, heartbeat: time.Minute})
	tok := k.joinToken(t)
	stacks := func() int64 {
		for range 3 {
			runtime.GC() // stacks shrink at collections
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.StackInuse)
	}
	s0 := stacks()
	souls := make([]*rawSoul, n)
	for i := range souls {
		souls[i] = dialLean(t, k)
		if m, err := souls[i].handshake(fmt.Sprintf("idle-%03d", i), nil, tok); err != nil || m.GetWelcome() == nil {
			t.Fatalf("handshake %d: %v %v", i, m, err)
		}
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(k.gw.ConnectedSIDs()) == n }, "%d souls connected", n)
	per := float64(stacks()-s0) / n
	t.Logf("keeper stack per idle lean soul: %.0f B", per)
	if per > 12<<10 {
		t.Fatalf("keeper stack per idle lean soul: %.0f B, want about 8 KiB (one reader on an 8 KiB stack)", per)
	}
}
