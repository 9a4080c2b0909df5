package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/store/storetest"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

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
	pgtest.ServerURL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.FreshDatabase(t))
	})
}

// TestMigrationsIdempotent opens one database from several keepers at once
// (the advisory lock serializes them), then again: each migration is
// applied exactly once and data survives.
func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := pgtest.FreshDatabase(t)
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
	addr := testutil.FreeAddr(t)
	_, err := postgres.Open(t.Context(), fmt.Sprintf("postgres://soulstack:x@%s/soulstack?sslmode=disable&connect_timeout=5", addr))
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
	dbURL := pgtest.FreshDatabase(t)
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
