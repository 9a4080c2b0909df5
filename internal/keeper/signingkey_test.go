package keeper_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// makeOldWay turns an initialized data directory into what the previous
// version left: the signing key's seed in the database's settings and no
// key file.
func makeOldWay(t *testing.T, cfg config.Keeper) {
	t.Helper()
	b, err := os.ReadFile(cfg.SigningKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), cfg.SQLitePath())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutSetting(context.Background(), auth.SettingSigningKey, k.(ed25519.PrivateKey).Seed()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfg.SigningKeyFile()); err != nil {
		t.Fatal(err)
	}
}

// TestM6ServeMigratesTheSigningKey: audit M6 — `keeper init` writes the
// signing key to a 0600 file in the data dir, never to the database; a
// keeper started on a database made the old way (key in settings) moves the
// key into the file, removes it from the database, and the token issued
// before keeps working.
func TestM6ServeMigratesTheSigningKey(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(cfg.DataDir, "signing.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keeper init's key file: %v, %v", fi, err)
	}
	st, err := sqlite.Open(ctx, cfg.SQLitePath())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetSetting(ctx, auth.SettingSigningKey); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("keeper init put a signing key in the database: %v", err)
	}
	st.Close()

	makeOldWay(t, cfg)
	// keeper init on it is refused (initialized), and already moves the key.
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("keeper init on an initialized old database: %v, want conflict", err)
	}
	if _, err := os.Stat(cfg.SigningKeyFile()); err != nil {
		t.Fatalf("keeper init did not move the key out: %v", err)
	}
	makeOldWay(t, cfg)

	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Store().GetSetting(ctx, auth.SettingSigningKey); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("the signing key is still in the database after start: %v", err)
	}
	if fi, err := os.Stat(cfg.SigningKeyFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("migrated key file: %v, %v", fi, err)
	}
	seedNotInSQLiteFiles(t, cfg, keyFileSeed(t, cfg))
	addr, stop := serveOn(t, k)
	defer func() { _ = stop() }()
	c, err := apiclient.New("http://"+addr, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	who, err := c.Whoami(ctx)
	if err != nil || who.Role != "admin" || !who.ExpiresAt.Equal(res.Token.ExpiresAt) {
		t.Fatalf("the old token after migration: %+v, %v", who, err)
	}
}

// keyFileSeed returns the seed of the Ed25519 key in cfg's key file.
func keyFileSeed(t *testing.T, cfg config.Keeper) []byte {
	t.Helper()
	b, err := os.ReadFile(cfg.SigningKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", cfg.SigningKeyFile())
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey).Seed()
}

// TestM6KeeperNeedsTheKeyFile: a keeper on a database whose key was moved
// out, without the key file, refuses to start and says what to copy.
func TestM6KeeperNeedsTheKeyFile(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfg.SigningKeyFile()); err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		k.Close()
		t.Fatal("a keeper started without its signing key")
	}
	if !strings.Contains(err.Error(), "signing_key_file") {
		t.Fatalf("the error does not name the key file setting: %v", err)
	}
}

// shareKeeperFiles gives the keeper of to what keepers sharing a database
// share: the TLS identity souls pin and the token signing key file.
func shareKeeperFiles(t *testing.T, from, to config.Keeper) {
	t.Helper()
	if err := os.CopyFS(to.TLSDir(), os.DirFS(from.TLSDir())); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(from.SigningKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to.SigningKeyFile()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to.SigningKeyFile(), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
