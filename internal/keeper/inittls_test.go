package keeper_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// mismatchedTLSFiles writes a certificate and a key of two different
// generated pairs: each parses, but they do not match.
func mismatchedTLSFiles(t *testing.T) (cert, key string) {
	t.Helper()
	a, err := tlsutil.Generate([]string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tlsutil.Generate([]string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, a.ServerCertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, b.ServerKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestInitBadTLSFilesSQLite: keeper init with a --tls-cert/--tls-key pair
// that does not match is refused before the store is created: no SQLite
// database is left in the data directory.
func TestInitBadTLSFilesSQLite(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.TLS.Cert, cfg.TLS.Key = mismatchedTLSFiles(t)
	if _, err := keeper.Init(context.Background(), keeper.InitOptions{Keeper: cfg}); err == nil {
		t.Fatal("init accepted a certificate and a key that do not match")
	}
	if _, err := os.Stat(cfg.SQLitePath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused init left a SQLite database at %s (stat: %v)", cfg.SQLitePath(), err)
	}

	// A missing key file is refused the same way.
	cfg.TLS.Key = filepath.Join(t.TempDir(), "missing.pem")
	if _, err := keeper.Init(context.Background(), keeper.InitOptions{Keeper: cfg}); err == nil {
		t.Fatal("init accepted a missing --tls-key")
	}
	if _, err := os.Stat(cfg.SQLitePath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused init left a SQLite database at %s (stat: %v)", cfg.SQLitePath(), err)
	}
}

// TestInitBadTLSFilesPostgres: the same on PostgreSQL: the database keeps
// no schema after the refused init, so a later serve still says it is
// not initialized.
func TestInitBadTLSFilesPostgres(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.DatabaseURL = pgtest.FreshDatabase(t)
	cfg.TLS.Cert, cfg.TLS.Key = mismatchedTLSFiles(t)
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err == nil {
		t.Fatal("init accepted a certificate and a key that do not match")
	}
	if ok, err := postgres.Initialized(ctx, cfg.DatabaseURL); err != nil || ok {
		t.Fatalf("after the refused init the database has a schema: %v, %v", ok, err)
	}
}
