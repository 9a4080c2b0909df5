package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/store/storetest"
)

// serverURL returns the test server's URL, skipping the test when none is
// configured (and failing in CI, where PostgreSQL is always provided).
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("SOULSTACK_TEST_DATABASE_URL")
	if u == "" {
		msg := "PostgreSQL store tests need a server: set SOULSTACK_TEST_DATABASE_URL " +
			"(scripts/test.sh installs and starts one and sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// freshDatabase creates an empty database for one test, dropped when the
// test ends, and returns its URL.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := serverURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SOULSTACK_TEST_DATABASE_URL: %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "soulstack_test_" + hex.EncodeToString(b[:])
	admin(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { admin(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// admin runs one statement on the server's maintenance database.
func admin(t *testing.T, base, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	// CREATE DATABASE copies template1 and fails if another session is
	// copying it at the same moment: retry briefly.
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, stmt)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "is being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func open(t *testing.T, databaseURL string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	serverURL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, freshDatabase(t))
	})
}

// TestMigrationsIdempotent opens one database from several keepers at once
// (the advisory lock serializes them), then again: each migration is
// applied exactly once and data survives.
func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := freshDatabase(t)
	const keepers = 4
	var wg sync.WaitGroup
	errs := make([]error, keepers)
	for i := range keepers {
		wg.Go(func() {
			s, err := postgres.Open(ctx, dbURL)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("keeper %d: %v", i, err)
		}
	}
	s := open(t, dbURL)
	if err := s.PutSetting(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dbURL)
	if got, err := s.GetSetting(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("after reopening: %q, %v", got, err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(t); n != want {
		t.Fatalf("schema_migrations has %d rows, want %d (one per migration file)", n, want)
	}
}

// TestUnavailable points the store at a port nobody listens on. It needs
// no server.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = postgres.Open(t.Context(), fmt.Sprintf("postgres://soulstack:x@%s/soulstack?sslmode=disable&connect_timeout=5", addr))
	if got := domain.ErrorCode(err); got != domain.CodeUnavailable {
		t.Fatalf("Open on a closed port: %v (code %s), want %s", err, got, domain.CodeUnavailable)
	}
}

func TestInvalidURL(t *testing.T) {
	t.Parallel()
	_, err := postgres.Open(t.Context(), "postgres://%zz")
	if got := domain.ErrorCode(err); got != domain.CodeInvalid {
		t.Fatalf("Open with a bad URL: %v (code %s), want %s", err, got, domain.CodeInvalid)
	}
}

// TestConnectionLost opens the store through a TCP proxy, then cuts the
// proxy: calls fail with CodeUnavailable instead of hanging or looking like
// a bug.
func TestConnectionLost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := freshDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.addr()
	s := open(t, u.String())
	if err := s.UpsertSoul(ctx, store.Soul{SID: "h1", Status: store.SoulPending}); err != nil {
		t.Fatal(err)
	}
	p.stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Ping(ctx); domain.ErrorCode(err) != domain.CodeUnavailable {
		t.Fatalf("Ping through a cut proxy: %v (code %s), want %s", err, domain.ErrorCode(err), domain.CodeUnavailable)
	}
	_, err = s.GetSoul(ctx, "h1")
	if got := domain.ErrorCode(err); got != domain.CodeUnavailable {
		t.Fatalf("GetSoul through a cut proxy: %v (code %s), want %s", err, got, domain.CodeUnavailable)
	}
	err = s.StartRun(ctx, store.Run{ID: "r1", Incarnation: "x", Scenario: "y"})
	if got := domain.ErrorCode(err); got != domain.CodeUnavailable {
		t.Fatalf("StartRun through a cut proxy: %v (code %s), want %s", err, got, domain.CodeUnavailable)
	}
}

// migrationCount is how many migration files the package embeds.
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	return len(files)
}
