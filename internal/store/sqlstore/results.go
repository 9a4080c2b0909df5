package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/store"
)

const resultCols = `run_id, seq, sid, path, task_name, wave, status, changed, rc, stdout, stderr, msg, diff,
	duration_ms, data, started_at, finished_at, final`

// resultArgs is the number of columns in resultCols.
const resultArgs = 18

// resultBatch is how many results one INSERT carries: 18 arguments each,
// well under SQLite's and PostgreSQL's parameter limits.
const resultBatch = 200

// RecordResults upserts per-host results keyed by (run, seq, sid), in
// multi-row statements inside one transaction. ErrNotFound when a run does
// not exist.
func (s *Store) RecordResults(ctx context.Context, rs []store.HostResult) error {
	_, err := s.upsertResults(ctx, rs, false)
	return err
}

// RecordLateResults records late results: each row is written only where
// its run has no row for (seq, sid) yet or the row there is not final (a
// keeper verdict on work whose soul never answered); what it writes is
// final, so a late result lands at most once. It returns how many rows
// were written.
func (s *Store) RecordLateResults(ctx context.Context, rs []store.HostResult) (int, error) {
	for i := range rs {
		rs[i].Final = true
	}
	return s.upsertResults(ctx, rs, true)
}

func (s *Store) upsertResults(ctx context.Context, rs []store.HostResult, late bool) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	// One statement may not touch a key twice (PostgreSQL refuses it): the
	// last result for a key wins, as it would with one upsert per result.
	type key struct {
		run string
		seq int
		sid string
	}
	last := make(map[key]int, len(rs))
	for i, r := range rs {
		last[key{r.RunID, r.Seq, r.SID}] = i
	}
	runs := map[string]bool{}
	args := make([]any, 0, len(rs)*resultArgs)
	for i, r := range rs {
		if last[key{r.RunID, r.Seq, r.SID}] != i {
			continue
		}
		runs[r.RunID] = true
		data, err := optMap(r.Data)
		if err != nil {
			return 0, s.wrap("recording results", err)
		}
		args = append(args, r.RunID, r.Seq, r.SID, r.Path, r.TaskName, r.Wave, r.Status, r.Changed, r.RC,
			r.Stdout, r.Stderr, r.Msg, r.Diff, r.DurationMS, data, s.ts(s.orNow(r.StartedAt)), s.ts(s.orNow(r.FinishedAt)), r.Final)
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", resultArgs), ", ") + ")"
	where := ""
	if late {
		where = ` WHERE NOT run_results.final`
	}
	written := 0
	err := s.inTx(ctx, "recording results", func(tx q) error {
		for id := range runs {
			if err := mustExist(ctx, tx, "run", "runs", "id", id); err != nil {
				return err
			}
		}
		for len(args) > 0 {
			n := min(len(args)/resultArgs, resultBatch)
			query := `INSERT INTO run_results (` + resultCols + `) VALUES ` +
				strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + `
				ON CONFLICT (run_id, seq, sid) DO UPDATE SET path = excluded.path, task_name = excluded.task_name,
					wave = excluded.wave, status = excluded.status, changed = excluded.changed, rc = excluded.rc,
					stdout = excluded.stdout, stderr = excluded.stderr, msg = excluded.msg, diff = excluded.diff,
					duration_ms = excluded.duration_ms, data = excluded.data, started_at = excluded.started_at,
					finished_at = excluded.finished_at, final = excluded.final` + where
			res, err := tx.exec(ctx, query, args[:n*resultArgs]...)
			if err != nil {
				return fmt.Errorf("writing %d results: %w", n, err)
			}
			if k, err := res.RowsAffected(); err == nil {
				written += int(k)
			}
			args = args[n*resultArgs:]
		}
		return nil
	})
	return written, err
}

// ListResults returns a run's results ordered by seq, then SID.
func (s *Store) ListResults(ctx context.Context, runID string) ([]store.HostResult, error) {
	rows, err := s.reader().query(ctx, `SELECT `+resultCols+` FROM run_results WHERE run_id = ? ORDER BY seq, sid`, runID)
	if err != nil {
		return nil, s.wrap("listing results", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.HostResult, error) {
		var r store.HostResult
		err := sc.Scan(&r.RunID, &r.Seq, &r.SID, &r.Path, &r.TaskName, &r.Wave, &r.Status, &r.Changed, &r.RC,
			&r.Stdout, &r.Stderr, &r.Msg, &r.Diff, &r.DurationMS, mapCol{m: &r.Data},
			timeCol{&r.StartedAt}, timeCol{&r.FinishedAt}, &r.Final)
		return r, err
	})
	return out, s.wrap("listing results", err)
}

// AddTriggers records pending onchanges triggers; ErrNotFound when an
// incarnation does not exist.
func (s *Store) AddTriggers(ctx context.Context, ts []store.PendingTrigger) error {
	if len(ts) == 0 {
		return nil
	}
	return s.inTx(ctx, "adding pending triggers", func(tx q) error {
		seen := map[string]bool{}
		for _, t := range ts {
			if !seen[t.Incarnation] {
				seen[t.Incarnation] = true
				if err := mustExist(ctx, tx, "incarnation", "incarnations", "name", t.Incarnation); err != nil {
					return err
				}
			}
			if _, err := tx.exec(ctx, `INSERT INTO pending_triggers (incarnation, scenario, task, sid, run_id, created_at)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (incarnation, scenario, task, sid) DO UPDATE SET run_id = excluded.run_id,
					created_at = excluded.created_at`,
				t.Incarnation, t.Scenario, t.Task, t.SID, t.RunID, s.ts(s.orNow(t.CreatedAt))); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListTriggers returns the pending triggers of an incarnation's scenario
// ("" = every scenario), ordered by scenario, task and SID.
func (s *Store) ListTriggers(ctx context.Context, incarnation, scenario string) ([]store.PendingTrigger, error) {
	query := `SELECT incarnation, scenario, task, sid, run_id, created_at FROM pending_triggers WHERE incarnation = ?`
	args := []any{incarnation}
	if scenario != "" {
		query += ` AND scenario = ?`
		args = append(args, scenario)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY scenario, task, sid`, args...)
	if err != nil {
		return nil, s.wrap("listing pending triggers", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.PendingTrigger, error) {
		var t store.PendingTrigger
		err := sc.Scan(&t.Incarnation, &t.Scenario, &t.Task, &t.SID, &t.RunID, timeCol{&t.CreatedAt})
		return t, err
	})
	return out, s.wrap("listing pending triggers", err)
}

// ClearTrigger removes one pending trigger; clearing an absent one is not
// an error.
func (s *Store) ClearTrigger(ctx context.Context, incarnation, scenario, task, sid string) error {
	_, err := s.write(ctx, `DELETE FROM pending_triggers WHERE incarnation = ? AND scenario = ? AND task = ? AND sid = ?`,
		incarnation, scenario, task, sid)
	return s.wrap("clearing pending trigger", err)
}
