package keeper_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
)

// TestNewUninitializedDataDir: serving a data directory `keeper init` never
// prepared is an error that says to run it, not a panic.
func TestNewUninitializedDataDir(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	k, err := keeper.New(context.Background(), keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		k.Close()
		t.Fatal("a keeper was built on an uninitialized data directory")
	}
	if !strings.Contains(err.Error(), "keeper init") {
		t.Fatalf("the error does not say to run keeper init: %v", err)
	}
	if ents, _ := os.ReadDir(cfg.DataDir); len(ents) > 0 {
		t.Fatalf("the failed start wrote into the data directory: %v", ents)
	}
}

// TestNewWithoutItsDatabase: a data directory initialized on PostgreSQL
// (TLS material, no keeper.db) served without --database-url is refused
// with a message naming the flag, and no empty SQLite database is created.
func TestNewWithoutItsDatabase(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"keeper.db", "keeper.db-wal", "keeper.db-shm"} {
		if err := os.Remove(filepath.Join(cfg.DataDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		k.Close()
		t.Fatal("a keeper was built on a data directory without its database")
	}
	if !strings.Contains(err.Error(), "--database-url") || !strings.Contains(err.Error(), "keeper init") {
		t.Fatalf("the error does not say what is missing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "keeper.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an empty database was left in the data directory (%v)", err)
	}
}

// TestServeHint: on PostgreSQL the printed start command asks for the
// database URL again.
func TestServeHint(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = "/var/lib/soulstack/keeper"
	if h := keeper.ServeHint(cfg); h != "`keeper serve --data-dir /var/lib/soulstack/keeper`" {
		t.Fatalf("SQLite hint: %s", h)
	}
	cfg.DatabaseURL = "postgres://u:secret@db/soulstack"
	h := keeper.ServeHint(cfg)
	if !strings.Contains(h, "--database-url") || strings.Contains(h, "secret") {
		t.Fatalf("PostgreSQL hint: %s", h)
	}
}
