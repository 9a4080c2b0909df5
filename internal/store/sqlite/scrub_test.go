package sqlite

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// TestM6DeletedSettingLeavesTheFile: audit M6 — the signing key an older
// version kept in settings, once deleted, is in neither keeper.db nor its
// WAL (SQLite leaves deleted content in a page's free space otherwise: a
// copy of the file would still mint admin tokens); other settings stay.
func TestM6DeletedSettingLeavesTheFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), DefaultFileName)
	seed := make([]byte, 32)
	rand.Read(seed)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting(ctx, "auth.signing_key", seed); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting(ctx, "other", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	holds := func() (bool, bool) {
		t.Helper()
		db, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		wal, err := os.ReadFile(path + "-wal")
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return bytes.Contains(db, seed), bytes.Contains(wal, seed)
	}
	if db, wal := holds(); !db && !wal {
		t.Fatal("the seed never reached the files: the test checks nothing")
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.DeleteSetting(ctx, "auth.signing_key"); err != nil {
		t.Fatal(err)
	}
	// Checked while the store is still open (no checkpoint at close helps).
	if db, wal := holds(); db || wal {
		t.Fatalf("after DeleteSetting the seed is still in keeper.db (%v) or its WAL (%v)", db, wal)
	}
	if v, err := s.GetSetting(ctx, "other"); err != nil || string(v) != "kept" {
		t.Fatalf("other setting: %q, %v", v, err)
	}
}

// TestScrubbedDeleteResetsTheConnection: the pooled connection a scrubbed
// delete used is out of secure mode afterwards (other writes stay fast).
func TestScrubbedDeleteResetsTheConnection(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", dsn(filepath.Join(t.TempDir(), "x.db"), false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('a'), ('b')`); err != nil {
		t.Fatal(err)
	}
	if n, err := scrubbedDelete(ctx, db, "t", `DELETE FROM t WHERE v = ?`, "a"); err != nil || n != 1 {
		t.Fatalf("scrubbed delete: %d, %v", n, err)
	}
	var mode int
	if err := db.QueryRowContext(ctx, `PRAGMA secure_delete`).Scan(&mode); err != nil || mode != 0 {
		t.Fatalf("secure_delete left at %d (%v) on the pooled connection", mode, err)
	}
}
