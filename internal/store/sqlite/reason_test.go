package sqlite

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/store/sqlstore"
)

// TestDiskFullReason: SQLite's "database or disk is full" is classified
// unavailable and given a reason clients can read.
func TestDiskFullReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=max_page_count(8)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO t VALUES (?)`, strings.Repeat("x", 1<<20))
	if err == nil {
		t.Fatal("a 1 MiB row fit in 8 pages")
	}
	if c := dialect.Classify(err); c != sqlstore.ClassUnavailable {
		t.Fatalf("class of %v = %d, want unavailable", err, c)
	}
	if r := dialect.Reason(err); r != "the disk is full" {
		t.Fatalf("reason of %v = %q", err, r)
	}
}
