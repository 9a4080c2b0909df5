package pgtest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestFreshDatabase gets two databases: each is empty and its own, and
// both are gone once their test ended.
func TestFreshDatabase(t *testing.T) {
	base := pgtest.ServerURL(t)
	var names []string
	t.Run("fresh", func(t *testing.T) {
		for range 2 {
			dbURL := pgtest.FreshDatabase(t)
			u, err := url.Parse(dbURL)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(u.Path, "/")
			var current string
			var tables int
			query(t, dbURL, "SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')", &current, &tables)
			if current != name || tables != 0 {
				t.Fatalf("connected to %q with %d tables, want the empty %q", current, tables, name)
			}
			names = append(names, name)
		}
		if names[0] == names[1] {
			t.Fatalf("two databases named %s", names[0])
		}
	})
	for _, name := range names {
		var n int
		query(t, base, "SELECT count(*) FROM pg_database WHERE datname = '"+name+"'", &n)
		if n != 0 {
			t.Errorf("database %s left after its test", name)
		}
	}
}

func query(t *testing.T, dbURL, q string, dest ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, q).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
