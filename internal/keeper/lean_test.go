package keeper_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/soulwire"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// TestLeanALPN: a keeper negotiates the lean soul stream (soulstack/1)
// with a client that offers it, and still serves the API over HTTP/2 and
// HTTP/1.1 on the same TLS port; with soul_lean_stream: false a soul
// offering soulstack/1 and h2 gets h2. Either way a real soul connects
// (over soulstack/1, or HTTP/2), and the keeper stops promptly with it
// connected.
func TestLeanALPN(t *testing.T) {
	for _, lean := range []bool{true, false} {
		t.Run(fmt.Sprintf("soul_lean_stream=%v", lean), func(t *testing.T) {
			ctx := context.Background()
			cfg := config.Default()
			cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
			cfg.ShutdownTimeout = config.Duration(5 * time.Second)
			cfg.SoulLeanStream = lean
			res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
			if err != nil {
				t.Fatal(err)
			}
			logs := &testutil.Buffer{}
			k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			addr, stop := serveOn(t, k)
			defer func() { _ = stop() }()
			defer func() {
				if t.Failed() {
					t.Logf("keeper logs:\n%s", logs)
				}
			}()
			pinned, err := tlsutil.PinnedClientConfig(res.Fingerprint)
			if err != nil {
				t.Fatal(err)
			}

			soulTLS := pinned.Clone()
			soulTLS.NextProtos = []string{soulwire.Proto, "h2"}
			c, err := tls.Dial("tcp", addr, soulTLS)
			if err != nil {
				t.Fatal(err)
			}
			got := c.ConnectionState().NegotiatedProtocol
			c.Close()
			want := "h2"
			if lean {
				want = soulwire.Proto
			}
			if got != want {
				t.Fatalf("a soul offering %v negotiated %q, want %q", soulTLS.NextProtos, got, want)
			}

			for _, h2 := range []bool{true, false} {
				tc := pinned.Clone()
				tc.NextProtos = nil // the transport offers what Protocols allow
				tr := &http.Transport{TLSClientConfig: tc, Protocols: new(http.Protocols)}
				tr.Protocols.SetHTTP1(!h2)
				tr.Protocols.SetHTTP2(h2)
				defer tr.CloseIdleConnections()
				req, _ := http.NewRequest("GET", "https://"+addr+"/v1/whoami", nil)
				req.Header.Set("Authorization", "Bearer "+res.Token.Token)
				resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
				if err != nil {
					t.Fatalf("API over h2=%v: %v", h2, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || (resp.ProtoMajor == 2) != h2 {
					t.Fatalf("API over h2=%v: %s %d %s", h2, resp.Proto, resp.StatusCode, b)
				}
			}

			ac, err := apiclient.New("https://"+addr, res.Token.Token, apiclient.WithFingerprint(res.Fingerprint))
			if err != nil {
				t.Fatal(err)
			}
			jt, err := ac.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{TTL: apitypes.Duration(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			d := filepath.Join(t.TempDir(), "soul")
			testutil.StartProcess(t, "soul", soulBin, "run", "--keeper", "https://"+addr, "--sid", "alpn-soul", "--data-dir", d,
				"--root", filepath.Join(d, "root"), "--join-token", jt.Token, "--reconnect-min", "50ms", "--reconnect-max", "300ms")
			testutil.WaitFor(t, 15*time.Second, func() bool { return k.Gateway().Connected("alpn-soul") }, "the soul connected")
			wantTransport := "transport=h2"
			if lean {
				wantTransport = "transport=" + soulwire.Proto
			}
			testutil.WaitFor(t, 5*time.Second, func() bool {
				for _, line := range strings.Split(logs.String(), "\n") {
					if strings.Contains(line, "soul connected") && strings.Contains(line, "sid=alpn-soul") {
						return strings.Contains(line, wantTransport)
					}
				}
				return false
			}, "the soul connected with %s", wantTransport)

			start := time.Now()
			if err := stop(); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if d := time.Since(start); d > 4*time.Second || strings.Contains(logs.String(), "graceful shutdown timed out") {
				t.Fatalf("the keeper took %s to stop with a soul connected", d)
			}
		})
	}
}
