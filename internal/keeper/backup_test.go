package keeper_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestBackupAndRestore: `keeper backup` copies the SQLite store of a
// serving keeper; the copy, put in place of a lost keeper.db, starts the
// keeper again with what it held (the Archon's token works, the data is
// there), as docs/operations.md "Backup and restore" says.
func TestBackupAndRestore(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := serveOn(t, k)
	if err := k.Store().PutSetting(ctx, "test.backup", []byte("before")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "keeper-backup.db")
	if b, err := exec.Command(keeperBin, "backup", "--data-dir", cfg.DataDir, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("keeper backup of a serving keeper: %v\n%s", err, b)
	}
	if b, err := exec.Command(keeperBin, "backup", "--data-dir", cfg.DataDir, "--out", out).CombinedOutput(); err == nil {
		t.Fatalf("keeper backup overwrote an existing file:\n%s", b)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v, %v", fi, err)
	}
	if err := k.Store().PutSetting(ctx, "test.backup", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	k.Close()

	// The database is lost; the backup is restored in its place.
	for _, f := range []string{"", "-wal", "-shm"} {
		os.Remove(cfg.SQLitePath() + f)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.SQLitePath(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	k, addr := serveKeeper(t, cfg, "restored keeper")
	cl, err := apiclient.New("http://"+addr, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return cl.Ready(ctx) == nil }, "restored keeper ready")
	if who, err := cl.Whoami(ctx); err != nil || who.Name != "admin" {
		t.Fatalf("whoami on the restored keeper: %+v, %v", who, err)
	}
	if v, err := k.Store().GetSetting(ctx, "test.backup"); err != nil || string(v) != "before" {
		t.Fatalf("the restored store holds %q (%v), want what the backup saw", v, err)
	}
}
