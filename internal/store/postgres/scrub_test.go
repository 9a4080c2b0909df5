package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestM6DeletedSettingIsRewrittenAway: audit M6 — deleting the signing key
// an older version kept in settings rewrites the table (VACUUM FULL: a new
// file, the old one with the dead row removed), so the table's files no
// longer hold it; deleting a missing setting rewrites nothing.
func TestM6DeletedSettingIsRewrittenAway(t *testing.T) {
	ctx := t.Context()
	dbURL := pgtest.FreshDatabase(t)
	s := open(t, dbURL)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	file := func() string {
		t.Helper()
		var f string
		if err := conn.QueryRow(ctx, `SELECT pg_relation_filepath('settings')`).Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if err := s.PutSetting(ctx, "auth.signing_key", []byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting(ctx, "other", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	before := file()
	if err := s.DeleteSetting(ctx, "auth.signing_key"); err != nil {
		t.Fatal(err)
	}
	after := file()
	if after == before {
		t.Fatalf("settings still in %s after the key was deleted: its dead row is still in the file", before)
	}
	if err := s.DeleteSetting(ctx, "auth.signing_key"); err != nil {
		t.Fatal(err)
	}
	if again := file(); again != after {
		t.Errorf("deleting a missing setting rewrote the table (%s -> %s)", after, again)
	}
	if v, err := s.GetSetting(ctx, "other"); err != nil || string(v) != "kept" {
		t.Fatalf("other setting: %q, %v", v, err)
	}
}
