package secrets_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// value is the secret the tests look for in every form.
const value = "Db-Pa55-w0rd!-4217"

func forms() []string {
	return []string{value, base64.StdEncoding.EncodeToString([]byte(value)), hex.EncodeToString([]byte(value))}
}

func exercise(t *testing.T, st store.Store, dir string) *secrets.Store {
	t.Helper()
	ctx := t.Context()
	key, err := secrets.LoadOrCreateKey(filepath.Join(dir, secrets.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	s, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "db_password", "old-value-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "db_password", value, "bob"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Value(ctx, "db_password")
	if err != nil || got != value {
		t.Fatalf("Value = %q, %v", got, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Owner != "alice" || list[0].Ciphertext != nil {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := s.Set(ctx, "bad name", "x", "alice"); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("a bad name: %v", err)
	}
	if err := s.Set(ctx, "empty", "", "alice"); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("an empty value: %v", err)
	}
	return s
}

func assertAbsent(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, f := range forms() {
		if bytes.Contains(b, []byte(f)) {
			t.Errorf("%s holds the secret in clear (%q)", where, f)
		}
	}
}

// TestSQLiteFileHoldsNoValue greps the SQLite database file (and its WAL)
// for the value, its base64 and hex forms (SPEC §10.5).
func TestSQLiteFileHoldsNoValue(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "keeper.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, st, dir)
	if fi, err := os.Stat(filepath.Join(dir, secrets.KeyFileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	// Before closing (the value may sit in the WAL) and after.
	files, _ := filepath.Glob(db + "*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		assertAbsent(t, f, b)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("db_password")) {
		t.Fatal("the database file does not even hold the secret's name: the grep proves nothing")
	}
	assertAbsent(t, db, b)

	// Another key does not open it; the same key file does.
	st2, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	other, _ := secrets.New(st2, bytes.Repeat([]byte{7}, 32))
	if _, err := other.Value(context.Background(), "db_password"); err == nil {
		t.Fatal("another key opened the secret")
	}
	key, err := secrets.LoadOrCreateKey(filepath.Join(dir, secrets.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := secrets.New(st2, key)
	if v, err := again.Value(t.Context(), "db_password"); err != nil || v != value {
		t.Fatalf("reopened: %q, %v", v, err)
	}
}

// TestPostgresHoldsNoValue reads the raw column and a pg_dump of the
// database for the value.
func TestPostgresHoldsNoValue(t *testing.T) {
	pgtest.ServerURL(t)
	dbURL := pgtest.FreshDatabase(t)
	st, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exercise(t, st, t.TempDir())
	rec, err := st.GetSecret(t.Context(), "db_password")
	if err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, "the raw ciphertext column", rec.Ciphertext)
	out, err := exec.CommandContext(t.Context(), "pg_dump", "--no-owner", dbURL).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "db_password") {
		t.Fatal("the dump does not hold the secret's name: the grep proves nothing")
	}
	assertAbsent(t, "pg_dump", out)
}

// TestKeyFileMode refuses a key file others may read.
func TestKeyFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), secrets.KeyFileName)
	if _, err := secrets.LoadOrCreateKey(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadOrCreateKey(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a 0644 key file: %v", err)
	}
}
