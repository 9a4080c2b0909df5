//go:build linux

package gateway_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/soulwire"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
	"github.com/soulstack/soulstack/proto/soulstack/v1/soulstackv1connect"
)

const stoppedReading = "the soul stopped reading: a send did not complete within"

// smallRcvbuf dials with a 64 KiB receive buffer (no autotuning: loopback
// would grow it to 32 MiB), so that a soul that does not read fills its
// connection after a few MiB.
var smallRcvbuf = &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
	}); err != nil {
		return err
	}
	return serr
}}

// dialLeanSmall is dialLean with smallRcvbuf.
func dialLeanSmall(t *testing.T, k *keeper) (*rawSoul, *tls.Conn) {
	t.Helper()
	cfg, err := tlsutil.PinnedClientConfig(k.fp)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{soulwire.Proto}
	c, err := tls.DialWithDialer(smallRcvbuf, "tcp", k.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawSoul{t: t, k: k, key: newKey(t), stream: &leanRaw{c: c}}, c
}

func newKey(t *testing.T) ed25519.PrivateKey {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// dialH2Small is dialRaw with smallRcvbuf; release closes its connection.
func dialH2Small(t *testing.T, k *keeper) (r *rawSoul, release func()) {
	t.Helper()
	tlsCfg, err := tlsutil.PinnedClientConfig(k.fp)
	if err != nil {
		t.Fatal(err)
	}
	protos := new(http.Protocols)
	protos.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, Protocols: protos, DialContext: smallRcvbuf.DialContext}
	cl := soulstackv1connect.NewSoulServiceClient(&http.Client{Transport: tr}, k.url,
		connect.WithGRPC(), connect.WithSendMaxBytes(gateway.MaxMessageBytes), connect.WithReadMaxBytes(gateway.MaxMessageBytes))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	st := cl.Connect(ctx)
	release = func() {
		_ = st.CloseRequest()
		_ = st.CloseResponse()
		cancel()
		tr.CloseIdleConnections()
	}
	t.Cleanup(release)
	return &rawSoul{t: t, k: k, key: newKey(t), stream: st}, release
}

// incompressible is n random bytes in base64 (gzip saves about a quarter).
func incompressible(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// heartbeats sends a heartbeat every 200 ms until stop is closed or a
// send fails; wait for the returned group before counting goroutines.
func heartbeats(r *rawSoul, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if r.stream.Send(&pb.SoulMessage{Msg: &pb.SoulMessage_Heartbeat{Heartbeat: &pb.Heartbeat{}}}) != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	return &wg
}

// goroutinesIn counts the goroutines whose stack holds fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 8<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn)
}

// A soul that keeps sending heartbeats but stops reading cannot hold the
// keeper's sender: once its connection is full, the send in progress
// fails after the send bound, the session ends with that reason, every
// task sent to it is answered unreachable, and no goroutine stays behind.
func TestSoulThatStopsReadingIsCut(t *testing.T) {
	const bound = time.Second
	big := incompressible(t, 3<<19) // 2 MiB of base64, about 1.5 MiB gzipped
	for _, tr := range []string{"lean", "h2"} {
		t.Run(tr, func(t *testing.T) {
			dir := t.TempDir()
			// A high rate: the bound is about SendTimeout for these messages.
			k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{sendTimeout: bound, sendRate: 1 << 30, noLean: tr == "h2"})
			tok := k.joinToken(t)
			runtime.GC()
			g0 := runtime.NumGoroutine()
			var r *rawSoul
			var closeSoul func()
			if tr == "lean" {
				var c *tls.Conn
				r, c = dialLeanSmall(t, k)
				closeSoul = func() { _ = c.Close() }
			} else {
				r, closeSoul = dialH2Small(t, k)
			}
			sid := "deaf-" + tr
			if m, err := r.handshake(sid, nil, tok); err != nil || m.GetWelcome() == nil {
				t.Fatalf("handshake: %v %v", m, err)
			}
			k.waitConnected(t, sid)
			stop := make(chan struct{})
			hb := heartbeats(r, stop)

			const n = 6 // 9 MiB: more than the connection holds unread (4 MiB send buffer or HTTP/2 window)
			start := time.Now()
			results := make(chan domain.Result, n)
			for i := range n {
				go func() {
					req := call(sid, fmt.Sprintf("big-%d", i), "core.test.echo", map[string]any{"message": big}, time.Minute)
					results <- k.gw.Dispatch(context.Background(), []dispatch.Request{req}, nil)[sid]
				}()
			}
			testutil.WaitFor(t, 5*time.Second, func() bool { return goroutinesIn("gateway.(*session).drain(") == 1 }, "a drain goroutine sending")
			for range n {
				select {
				case res := <-results:
					if !res.Unreachable || !strings.Contains(res.Msg, stoppedReading) {
						t.Fatalf("a dispatch to the soul that stopped reading: %+v, want unreachable with %q", res, stoppedReading)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("the dispatches to a soul that stopped reading still wait after 20 s")
				}
			}
			took := time.Since(start)
			t.Logf("%s: the session ended %s after the dispatches began (send bound %s)", tr, took, bound)
			if took < bound {
				t.Fatalf("the session ended after %s, before the send bound %s", took, bound)
			}
			testutil.WaitFor(t, 5*time.Second, func() bool {
				return !k.gw.Connected(sid) && strings.Contains(logLine(k.logs.String(), "soul disconnected", "sid="+sid), stoppedReading)
			}, "%s detached, logged disconnected with %q", sid, stoppedReading)
			close(stop)
			hb.Wait()
			closeSoul()
			var g int
			testutil.WaitFor(t, 10*time.Second, func() bool {
				g = runtime.NumGoroutine()
				return g <= g0 && goroutinesIn("gateway.(*session).drain(") == 0
			}, "goroutines back to %d (now %d)", g0, g)
		})
	}
}

// A soul that reads slowly — well above the rate floor — gets a large
// message through although its send takes far longer than SendTimeout;
// the same soul against a keeper without the size-proportional part of
// the bound is cut (so the send did block for longer than SendTimeout).
func TestSlowReadingSoulIsNotCut(t *testing.T) {
	const base = 250 * time.Millisecond
	big := incompressible(t, 6<<20) // 8 MiB of base64, 6 MiB gzipped
	for _, c := range []struct {
		name string
		rate int
		cut  bool
	}{{"rate-floor", 0, false}, {"no-rate-floor", 1 << 30, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{sendTimeout: base, sendRate: c.rate})
			r, conn := dialLeanSmall(t, k)
			sid := "slow-" + c.name
			if m, err := r.handshake(sid, nil, k.joinToken(t)); err != nil || m.GetWelcome() == nil {
				t.Fatalf("handshake: %v %v", m, err)
			}
			k.waitConnected(t, sid)
			stop := make(chan struct{})
			defer close(stop)
			heartbeats(r, stop)
			done := make(chan domain.Result, 1)
			go func() {
				req := call(sid, "big", "core.test.echo", map[string]any{"message": big}, time.Minute)
				done <- k.gw.Dispatch(context.Background(), []dispatch.Request{req}, nil)[sid]
			}()
			// Read 64 KiB every 25 ms: 2.5 MiB/s, ten times the default
			// floor.
			start := time.Now()
			read := make(chan error, 1)
			var got atomic.Int64
			go func() {
				buf := make([]byte, 64<<10)
				for got.Load() < 6<<20 {
					time.Sleep(25 * time.Millisecond)
					n, err := io.ReadFull(conn, buf)
					got.Add(int64(n))
					if err != nil {
						read <- err
						return
					}
				}
				read <- nil
			}()
			var rerr error
			select {
			case rerr = <-read:
			case res := <-done:
				if !c.cut {
					t.Fatalf("the dispatch to the slow soul ended after %d bytes read: %+v", got.Load(), res)
				}
				t.Logf("%s: cut after %d bytes read in %s", c.name, got.Load(), time.Since(start))
				if !res.Unreachable || !strings.Contains(res.Msg, stoppedReading) {
					t.Fatalf("without a rate floor: %+v, want unreachable with %q", res, stoppedReading)
				}
				return
			case <-time.After(20 * time.Second):
				t.Fatalf("the slow soul read %d bytes in 20 s", got.Load())
			}
			t.Logf("%s: read %d bytes in %s (%v)", c.name, got.Load(), time.Since(start), rerr)
			if c.cut || rerr != nil {
				t.Fatalf("the slow soul's read ended after %d bytes (%v), want cut %v", got.Load(), rerr, c.cut)
			}
			if !k.gw.Connected(sid) {
				t.Fatalf("the slow soul was cut; logs:\n%s", k.logs.String())
			}
		})
	}
}

// A lean soul that sends pings but reads none of the pongs cannot hold
// the keeper's reader either: the pong that does not go out within the
// send bound ends the session with the same reason.
func TestLeanPongToSoulThatStopsReading(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{sendTimeout: 500 * time.Millisecond, heartbeat: time.Minute})
	r, conn := dialLeanSmall(t, k)
	const sid = "deaf-pings"
	if m, err := r.handshake(sid, nil, k.joinToken(t)); err != nil || m.GetWelcome() == nil {
		t.Fatalf("handshake: %v %v", m, err)
	}
	k.waitConnected(t, sid)
	pings := make([]byte, 0, 1000*(soulwire.HeaderLen+soulwire.PingLen))
	for range 1000 {
		f := soulwire.ControlFrame(soulwire.FlagPing, make([]byte, soulwire.PingLen))
		pings = append(pings, f[:]...)
	}
	start := time.Now()
	var sent int
	for k.gw.Connected(sid) && time.Since(start) < 30*time.Second {
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		n, err := conn.Write(pings)
		sent += n
		if err != nil && !isTimeout(err) {
			break
		}
	}
	t.Logf("sent %d bytes of pings in %s", sent, time.Since(start))
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return !k.gw.Connected(sid) && strings.Contains(logLine(k.logs.String(), "soul disconnected", "sid="+sid), stoppedReading)
	}, "%s detached, logged disconnected with %q", sid, stoppedReading)
}
