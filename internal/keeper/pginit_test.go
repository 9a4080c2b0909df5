package keeper_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestNewUninitializedPostgres: serving an initialized data directory on
// an empty PostgreSQL database that keeper init never prepared (a wrong
// --database-url, most likely) is refused with a message saying so, and
// the database is left as it was: no schema is created in it first.
func TestNewUninitializedPostgres(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.FreshDatabase(t)
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err != nil { // TLS material, on SQLite
		t.Fatal(err)
	}
	cfg.DatabaseURL = dbURL
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		k.Close()
		t.Fatal("a keeper was built on an uninitialized PostgreSQL database")
	}
	if !strings.Contains(err.Error(), "is not initialized") || !strings.Contains(err.Error(), "keeper init") {
		t.Fatalf("the error does not say the database is not initialized: %v", err)
	}
	if strings.Contains(err.Error(), "soulstack:soulstack@") {
		t.Fatalf("the error shows the database password: %v", err)
	}
	if ok, err := postgres.Initialized(ctx, dbURL); err != nil || ok {
		t.Fatalf("after the refused start the database has a schema: %v, %v", ok, err)
	}

	// Once keeper init ran on it, it serves.
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err != nil {
		t.Fatal(err)
	}
	k, err = keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
}
