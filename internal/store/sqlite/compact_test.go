package sqlite

import (
	"database/sql"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlstore"
)

// TestCompactResultsMigration writes results in the schema before
// migration 0210 (text run IDs, SIDs and times) and checks that after it
// the store reads them back unchanged, and that a run created afterwards
// gets the next run number.
func TestCompactResultsMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), DefaultFileName)
	if err := createFile(path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []sqlstore.Migration
	for _, m := range ms {
		if m.Version < 210 {
			before = append(before, m)
		}
	}
	if err := sqlstore.Migrate(ctx, db, dialect, before); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO services (name, git, ref, created_at, updated_at) VALUES ('svc', 'g', 'main', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')`,
		`INSERT INTO incarnations (name, service, status, created_at, updated_at) VALUES ('inc', 'svc', 'ready', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')`,
		`INSERT INTO runs (id, incarnation, scenario, status, created_at) VALUES ('run-a', 'inc', 'create', 'succeeded', '2026-01-01T00:00:00.000000Z')`,
		`INSERT INTO run_results (run_id, seq, sid, path, task_name, wave, status, changed, rc, stdout, msg, duration_ms, data, started_at, finished_at, final)
		 VALUES ('run-a', 0, 'web-2', '1', 'write', 1, 'changed', 1, 0, 'out', 'm', 12, '{"k":"v"}', '2026-03-04T05:06:07.123456Z', '2026-03-04T05:06:08.000001Z', 1),
		        ('run-a', 0, 'web-1', '1', 'write', 0, 'ok', 0, 0, '', '', 3, NULL, '2026-03-04T05:06:07.000000Z', '2026-03-04T05:06:07.003000Z', 0)`,
		`INSERT INTO history (incarnation, run_id, scenario, summary, created_at) VALUES
		 ('inc', 'run-a', 'create', '{"web-1":{"ok":2,"changed":1,"failed":0,"skipped":0},"web-2":{"ok":3,"changed":0,"failed":1,"skipped":1}}', '2026-01-01T00:00:00.000000Z'),
		 ('inc', 'run-a', 'create', '{}', '2026-01-01T00:00:01.000000Z')`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := s.ListResults(ctx, "run-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("results after migration: %+v", rs)
	}
	a, b := rs[0], rs[1]
	wantStart := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if a.SID != "web-1" || a.Status != "ok" || a.Changed || a.Final || a.DurationMS != 3 || a.Data != nil ||
		!a.StartedAt.Equal(wantStart) || !a.FinishedAt.Equal(wantStart.Add(3*time.Millisecond)) {
		t.Errorf("web-1 after migration: %+v", a)
	}
	if b.SID != "web-2" || b.Path != "1" || b.TaskName != "write" || b.Wave != 1 || b.Status != "changed" || !b.Changed ||
		b.Stdout != "out" || b.Msg != "m" || !b.Final || b.Data["k"] != "v" ||
		!b.StartedAt.Equal(wantStart.Add(123456*time.Microsecond)) || !b.FinishedAt.Equal(wantStart.Add(time.Second+time.Microsecond)) {
		t.Errorf("web-2 after migration: %+v", b)
	}
	hist, err := s.ListHistory(ctx, "inc", 0)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history after migration: %+v, %v", hist, err)
	}
	want := map[string]any{"hosts": 2.0, "hosts_changed": 1.0, "hosts_failed": 1.0, "ok": 5.0, "changed": 1.0, "failed": 1.0, "skipped": 1.0}
	if got := hist[1].Summary; !maps.Equal(got, want) {
		t.Errorf("old per-host summary converted to %v, want %v", got, want)
	}
	want = map[string]any{"hosts": 0.0, "hosts_changed": 0.0, "hosts_failed": 0.0, "ok": 0.0, "changed": 0.0, "failed": 0.0, "skipped": 0.0}
	if got := hist[0].Summary; !maps.Equal(got, want) {
		t.Errorf("empty summary converted to %v, want %v", got, want)
	}
	if err := s.StartRun(ctx, store.Run{ID: "run-b", Incarnation: "inc", Scenario: "x"}); err != nil {
		t.Fatal(err)
	}
	rdb, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	for id, want := range map[string]int{"run-a": 1, "run-b": 2} {
		var num int
		if err := rdb.QueryRowContext(ctx, `SELECT num FROM runs WHERE id = ?`, id).Scan(&num); err != nil || num != want {
			t.Errorf("%s's number: %d, %v; want %d", id, num, err, want)
		}
	}
}
