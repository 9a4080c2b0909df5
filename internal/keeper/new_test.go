package keeper_test

import (
	"context"
	"log/slog"
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
}
