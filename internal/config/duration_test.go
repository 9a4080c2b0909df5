package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/config"
)

// An invalid duration in the config file names its key, not just its
// value and line.
func TestLoadNamesTheDurationKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keeper.yaml")
	if err := os.WriteFile(path, []byte("data_dir: x\nheartbeat_interval: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path)
	if err == nil || !strings.Contains(err.Error(), `line 2: heartbeat_interval: invalid duration "5"`) {
		t.Fatalf("Load: %v, want an error naming heartbeat_interval", err)
	}
}
