package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/testutil"
)

// A soul of another release line is refused at hello with a message that
// says what to install, keeps retrying (an upgrade heals it) and never
// reaches the store; a soul of an older patch of the same line connects
// and the keeper records its version.
func TestIncompatibleSoulVersionRefused(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{version: "v1.4.0"})
	logs := &testutil.Buffer{}
	runAgent(t, soul.Config{
		KeeperURL: k.url, SID: "future", DataDir: filepath.Join(dir, "future"), JoinToken: k.joinToken(t),
		Version: "v2.0.0", Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	testutil.WaitFor(t, 5*time.Second, func() bool {
		return strings.Contains(logs.String(), "soul version v2.0.0 cannot speak to keeper version v1.4.0")
	}, "the version refusal in the soul's log")
	if strings.Contains(logs.String(), "protocol") {
		t.Errorf("the refusal reads as a protocol error:\n%s", logs)
	}
	if _, err := k.store.GetSoul(context.Background(), "future"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a soul of an incompatible version reached the store: %v", err)
	}

	runAgent(t, soul.Config{KeeperURL: k.url, SID: "older", DataDir: filepath.Join(dir, "older"), JoinToken: k.joinToken(t), Version: "v1.3.7"})
	k.waitConnected(t, "older")
	if got := k.soul(t, "older").Version; got != "v1.3.7" {
		t.Fatalf("stored version = %q, want v1.3.7", got)
	}
}
