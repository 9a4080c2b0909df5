// Package pgtest gives each test a fresh PostgreSQL database on the server
// named by SOULSTACK_TEST_DATABASE_URL, so store tests run in parallel
// without seeing each other's rows. It is apart from testutil because it
// needs a PostgreSQL driver.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable with the test server's URL (its
// maintenance database, e.g.
// postgres://soulstack:soulstack@127.0.0.1:5432/postgres?sslmode=disable).
const EnvURL = "SOULSTACK_TEST_DATABASE_URL"

// ServerURL returns the test server's URL. Without one the test is
// skipped, except in CI (CI=true), where it fails: CI always provides
// PostgreSQL, so nothing may be skipped there.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		msg := "needs PostgreSQL: set " + EnvURL + " to a server's maintenance database " +
			"(scripts/test.sh installs and starts one and sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// FreshDatabase creates an empty database on the test server (see
// ServerURL), drops it when the test ends, and returns its URL.
func FreshDatabase(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	name := "soulstack_test_" + strings.ToLower(rand.Text()[:12])
	admin(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { admin(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// admin runs one statement on the server's maintenance database.
func admin(t testing.TB, base, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	// CREATE DATABASE copies template1 and fails if another session is
	// copying it at the same moment: retry briefly.
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, stmt)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "is being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
