package keeper_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/soulwire"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// TestLeanALPN: a keeper negotiates the lean soul stream (soulstack/1)
// with a client that offers it, and still serves the API over HTTP/2 and
// HTTP/1.1 on the same TLS port; with soul_lean_stream: false a soul
// offering soulstack/1 and h2 gets h2.
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
			_, addr := serveKeeper(t, cfg, "keeper")
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
		})
	}
}
