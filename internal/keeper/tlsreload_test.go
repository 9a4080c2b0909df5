package keeper_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// TestReloadTLSKeepsSouls: ReloadTLS (what SIGHUP does) serves new TLS
// material to new handshakes, while the souls' streams and an open client
// connection established before it stay up. The new material has another
// CA, so a soul whose stream dropped could not come back (it pins the old
// one): souls still connected prove nothing was dropped.
func TestReloadTLSKeepsSouls(t *testing.T) {
	ctx := context.Background()
	f := &fleet{t: t, ctx: ctx, dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(f.dir, "keeper")
	cfg.HeartbeatInterval = config.Duration(time.Second)
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var k *keeper.Keeper
	k, f.addr = serveKeeper(t, cfg, "keeper")
	f.fp, f.token = res.Fingerprint, res.Token.Token
	f.connect()
	f.startSouls()

	// A client connection opened before the reload (HTTP/1.1 keep-alive).
	old, err := tls.Dial("tcp", f.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	br := bufio.NewReader(old)
	get := func() int {
		if _, err := fmt.Fprintf(old, "GET /healthz HTTP/1.1\r\nHost: keeper\r\n\r\n"); err != nil {
			t.Fatalf("the old connection: %v", err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the old connection: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}
	before := old.ConnectionState().PeerCertificates[0].Raw

	fresh, err := tlsutil.Generate([]string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Save(cfg.TLSDir()); err != nil {
		t.Fatal(err)
	}
	if err := k.ReloadTLS(); err != nil {
		t.Fatal(err)
	}

	// New handshakes see the new certificate.
	nc, err := tls.Dial("tcp", f.addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	leaf := nc.ConnectionState().PeerCertificates[0]
	nc.Close()
	want, err := tlsutil.ParseCertPEM(fresh.ServerCertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(leaf.Raw, want.Raw) || bytes.Equal(leaf.Raw, before) {
		t.Fatalf("a new handshake got %s, want the reloaded certificate", leaf.Subject)
	}
	// The connections made before stay up: the client's answers on the same
	// connection, and the souls stay connected over several heartbeats.
	if code := get(); code != http.StatusOK {
		t.Errorf("healthz on the old connection after the reload: %d", code)
	}
	for range 6 {
		time.Sleep(500 * time.Millisecond)
		for _, sid := range fleetSIDs {
			s, err := f.c.GetSoul(ctx, sid)
			if err != nil || s.Status != store.SoulConnected {
				t.Fatalf("soul %s after the reload: %+v, %v", sid, s.Status, err)
			}
		}
	}
}
