package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite" // a second, real connection to the keeper's database

	"github.com/soulstack/soulstack/internal/testutil"
)

// TestL11ReadyzFailsWhenTheStoreCannotWrite: audit L11 — while another
// process holds the database's write lock (the store answers reads but
// no write can land, as with an immutable or full disk), /readyz answers
// 503; once writes work again it is ready within the probe's cache time.
func TestL11ReadyzFailsWhenTheStoreCannotWrite(t *testing.T) {
	e := newEnv(t)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(filepath.Dir(e.services), "keeper.db")+"?_pragma=busy_timeout(100)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var got int
	var body []byte
	testutil.WaitFor(t, 15*time.Second, func() bool {
		got, body = e.do("GET", "/readyz", "", "")
		return got == http.StatusServiceUnavailable
	}, "readyz to fail while the store cannot write")
	if d := e.wantError("GET", "/readyz", http.StatusServiceUnavailable, "unavailable", body, got); d.Message != "the store cannot write" {
		t.Errorf("readyz message %q", d.Message)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool {
		got, _ = e.do("GET", "/readyz", "", "")
		return got == http.StatusOK
	}, "readyz to recover once writes work")
}
