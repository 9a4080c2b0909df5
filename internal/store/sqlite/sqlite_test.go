package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/store/storetest"
)

func open(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), sqlite.DefaultFileName))
	})
}

// raw opens the database file directly, bypassing the store.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMigrationsIdempotent(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "data", sqlite.DefaultFileName) // the directory is created
	s := open(t, path)
	if err := s.PutSetting(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	got, err := s.GetSetting(ctx, "k")
	if err != nil || string(got) != "v" {
		t.Fatalf("after reopening: %q, %v", got, err)
	}
	var n int
	if err := raw(t, path).QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(t); n != want {
		t.Fatalf("schema_migrations has %d rows, want %d (one per migration file)", n, want)
	}
}

func TestPragmasAndFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), sqlite.DefaultFileName)
	s := open(t, path)
	if s.Path() != path {
		t.Fatalf("Path() = %q, want %q", s.Path(), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("database file mode %v, want 0600", fi.Mode().Perm())
	}
	var mode string
	if err := raw(t, path).QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), sqlite.DefaultFileName)
	open(t, path).Close()
	if _, err := raw(t, path).ExecContext(ctx,
		"INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 'x')"); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(ctx, path); err == nil {
		s.Close()
		t.Fatal("opened a database with a newer schema")
	}
}

func TestUnavailable(t *testing.T) {
	// The parent of the database path is a regular file: nothing can be opened.
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), filepath.Join(blocker, sqlite.DefaultFileName))
	if got := domain.ErrorCode(err); got != domain.CodeUnavailable {
		t.Fatalf("Open under a file: %v (code %s), want %s", err, got, domain.CodeUnavailable)
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
