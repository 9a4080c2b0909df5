package keeper_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
)

// freshDatabase creates an empty PostgreSQL database for one test (dropped
// afterwards) on the server of SOULSTACK_TEST_DATABASE_URL.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SOULSTACK_TEST_DATABASE_URL")
	if base == "" {
		msg := "needs PostgreSQL: set SOULSTACK_TEST_DATABASE_URL (scripts/test.sh starts a server and sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "soulstack_keeper_test_" + hex.EncodeToString(b[:])
	exec := func(stmt string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connecting to the test server: %v", err)
		}
		defer conn.Close(ctx)
		for i := 0; ; i++ {
			_, err = conn.Exec(ctx, stmt)
			if err == nil || i == 20 {
				break
			}
			time.Sleep(50 * time.Millisecond) // template1 busy with a parallel CREATE DATABASE
		}
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec("CREATE DATABASE " + name)
	t.Cleanup(func() { exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// TestPostgresKeepers initializes a keeper on PostgreSQL and runs two
// keepers on that database: a token the first issued works on the second
// (the signing key lives in the database), and initializing again is
// refused.
func TestPostgresKeepers(t *testing.T) {
	ctx := context.Background()
	dbURL := freshDatabase(t)
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "k1")
	cfg.DatabaseURL = dbURL
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.DataDir = filepath.Join(dir, "k2")
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg2}); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("second init on the same database: %v", err)
	}
	// Keepers sharing a database share the TLS identity souls pin.
	if err := os.CopyFS(cfg2.TLSDir(), os.DirFS(cfg.TLSDir())); err != nil {
		t.Fatal(err)
	}

	var clients []*apiclient.Client
	for _, c := range []config.Keeper{cfg, cfg2} {
		k, err := keeper.New(ctx, keeper.Config{Keeper: c, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- k.Serve(runCtx, ln) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
			k.Close()
		})
		if k.Fingerprint() != res.Fingerprint {
			t.Fatalf("keeper fingerprint %s, init said %s", k.Fingerprint(), res.Fingerprint)
		}
		cl, err := apiclient.New("http://"+ln.Addr().String(), res.Token.Token)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
	}
	created, err := clients[0].CreateArchon(ctx, apiclient.CreateArchonRequest{Name: "ops", Role: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	if who, err := clients[1].Whoami(ctx); err != nil || who.ArchonID != res.Archon.ID {
		t.Fatalf("whoami on the second keeper: %+v, %v", who, err)
	}
	// A revocation on one keeper holds on the other.
	if err := clients[1].RevokeToken(ctx, created.Token.ID); err != nil {
		t.Fatal(err)
	}
	ops, _ := apiclient.New(clients[0].BaseURL(), created.Token.Token)
	if _, err := ops.Whoami(ctx); domain.ErrorCode(err) != domain.CodeUnauthorized {
		t.Fatalf("revoked token on the first keeper: %v", err)
	}
	if err := clients[0].Ready(ctx); err != nil {
		t.Fatal(err)
	}
}
