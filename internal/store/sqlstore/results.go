package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// resultCols are run_results' columns (migration 0210): the run and the
// host by number (runs.num, result_hosts.id), times as integer
// microseconds.
const resultCols = `run, seq, host, path, task_name, wave, status, changed, rc, stdout, stderr, msg, diff,
	duration_ms, data, started_us, elapsed_us, final, detail`

// resultArgs is the number of columns in resultCols.
const resultArgs = 19

// resultBatch is how many results one INSERT carries: 19 arguments each,
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
	runs := map[string]int64{}
	sids := make([]string, 0, len(rs))
	for i, r := range rs {
		last[key{r.RunID, r.Seq, r.SID}] = i
		runs[r.RunID] = 0
		sids = append(sids, r.SID)
	}
	hosts, err := s.hostNumbers(ctx, sids)
	if err != nil {
		return 0, s.wrap("recording results", err)
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", resultArgs), ", ") + ")"
	where := ""
	if late {
		where = ` WHERE NOT run_results.final`
	}
	written := 0
	err = s.inTx(ctx, "recording results", func(tx q) error {
		for id := range runs {
			var num int64
			err := tx.row(ctx, `SELECT num FROM runs WHERE id = ?`, id).Scan(&num)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("run", id)
			}
			if err != nil {
				return err
			}
			runs[id] = num
		}
		bodies := make([]string, len(rs))
		for i, r := range rs {
			if last[key{r.RunID, r.Seq, r.SID}] == i {
				body, err := resultText(r)
				if err != nil {
					return err
				}
				bodies[i] = body
			}
		}
		texts, err := internTexts(ctx, tx, bodies)
		if err != nil {
			return err
		}
		args := make([]any, 0, len(rs)*resultArgs)
		for i, r := range rs {
			if last[key{r.RunID, r.Seq, r.SID}] != i {
				continue
			}
			var detail any
			if bodies[i] != "" {
				detail = texts[bodies[i]]
			}
			start, end := normTime(s.orNow(r.StartedAt)), normTime(s.orNow(r.FinishedAt))
			args = append(args, runs[r.RunID], r.Seq, hosts[r.SID], r.Path, r.TaskName, r.Wave, r.Status, r.Changed, r.RC,
				r.Stdout, r.Stderr, "", r.Diff, r.DurationMS, nil, start.UnixMicro(), end.Sub(start).Microseconds(), r.Final, detail)
		}
		for len(args) > 0 {
			n := min(len(args)/resultArgs, resultBatch)
			query := `INSERT INTO run_results (` + resultCols + `) VALUES ` +
				strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + `
				ON CONFLICT (run, seq, host) DO UPDATE SET path = excluded.path, task_name = excluded.task_name,
					wave = excluded.wave, status = excluded.status, changed = excluded.changed, rc = excluded.rc,
					stdout = excluded.stdout, stderr = excluded.stderr, msg = excluded.msg, diff = excluded.diff,
					duration_ms = excluded.duration_ms, data = excluded.data, started_us = excluded.started_us,
					elapsed_us = excluded.elapsed_us, final = excluded.final, detail = excluded.detail` + where
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
	return s.listResults(ctx, runID, "", nil)
}

// listResults reads a run's results by seq and sid, of the hosts numbered
// hosts only when hosts is not nil.
func (s *Store) listResults(ctx context.Context, runID, op string, hosts []any) ([]store.HostResult, error) {
	if op == "" {
		op = "listing results"
	}
	query := `SELECT rr.seq, h.sid, rr.path, rr.task_name, rr.wave, rr.status, rr.changed, rr.rc,
		rr.stdout, rr.stderr, rr.msg, rr.diff, rr.duration_ms, rr.data, rr.started_us, rr.elapsed_us, rr.final, t.body
		FROM run_results rr JOIN result_hosts h ON h.id = rr.host LEFT JOIN result_texts t ON t.id = rr.detail
		WHERE rr.run = (SELECT num FROM runs WHERE id = ?)`
	args := []any{runID}
	if hosts != nil {
		query += ` AND rr.host IN (` + placeholders(len(hosts)) + `)`
		args = append(args, hosts...)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY rr.seq, h.sid`, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.HostResult, error) {
		r := store.HostResult{RunID: runID}
		var start, elapsed int64
		var text sql.NullString
		err := sc.Scan(&r.Seq, &r.SID, &r.Path, &r.TaskName, &r.Wave, &r.Status, &r.Changed, &r.RC,
			&r.Stdout, &r.Stderr, &r.Msg, &r.Diff, &r.DurationMS, mapCol{m: &r.Data}, &start, &elapsed, &r.Final, &text)
		if err == nil && text.Valid {
			err = parseResultText(text.String, &r)
		}
		r.StartedAt = time.UnixMicro(start).UTC()
		r.FinishedAt = time.UnixMicro(start + elapsed).UTC()
		return r, err
	})
	return out, s.wrap(op, err)
}

// PageResults returns the results of one page of a run's hosts, with the
// run's per-task counts over all its hosts.
func (s *Store) PageResults(ctx context.Context, runID string, rq store.ResultQuery) (store.ResultPage, error) {
	const op = "listing a page of results"
	limit := store.PageLimit(rq.Limit)
	var page store.ResultPage
	rows, err := s.reader().query(ctx, `SELECT rr.seq, rr.path, rr.task_name, rr.status, rr.changed, COUNT(*)
		FROM run_results rr WHERE rr.run = (SELECT num FROM runs WHERE id = ?)
		GROUP BY rr.seq, rr.path, rr.task_name, rr.status, rr.changed ORDER BY rr.seq, rr.path`, runID)
	if err != nil {
		return page, s.wrap(op, err)
	}
	for rows.Next() {
		var c store.TaskCounts
		var status string
		var changed bool
		var n int
		if err := rows.Scan(&c.Seq, &c.Path, &c.TaskName, &status, &changed, &n); err != nil {
			rows.Close()
			return page, s.wrap(op, err)
		}
		if k := len(page.Tasks); k == 0 || page.Tasks[k-1].Seq != c.Seq || page.Tasks[k-1].Path != c.Path {
			c.Statuses = map[string]int{}
			page.Tasks = append(page.Tasks, c)
		}
		t := &page.Tasks[len(page.Tasks)-1]
		t.Hosts += n
		t.Statuses[status] += n
		if changed {
			t.Changed += n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return page, s.wrap(op, err)
	}
	if err := s.reader().row(ctx, `SELECT COUNT(DISTINCT host) FROM run_results
		WHERE run = (SELECT num FROM runs WHERE id = ?)`, runID).Scan(&page.Hosts); err != nil {
		return page, s.wrap(op, err)
	}
	rows, err = s.reader().query(ctx, `SELECT DISTINCT h.id, h.sid FROM run_results rr JOIN result_hosts h ON h.id = rr.host
		WHERE rr.run = (SELECT num FROM runs WHERE id = ?) AND h.sid > ? ORDER BY h.sid LIMIT ?`, runID, rq.After, limit+1)
	if err != nil {
		return page, s.wrap(op, err)
	}
	hosts := []any{}
	var sids []string
	for rows.Next() {
		var id int64
		var sid string
		if err := rows.Scan(&id, &sid); err != nil {
			rows.Close()
			return page, s.wrap(op, err)
		}
		hosts, sids = append(hosts, id), append(sids, sid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return page, s.wrap(op, err)
	}
	if len(hosts) > limit {
		hosts = hosts[:limit]
		page.Next = sids[limit-1]
	}
	if len(hosts) == 0 {
		page.Results = []store.HostResult{}
		return page, nil
	}
	page.Results, err = s.listResults(ctx, runID, op, hosts)
	return page, err
}

// hostNumbers returns the result_hosts number of each SID, adding the
// SIDs not numbered yet in a transaction of their own. Numbers are never
// deleted or reused, so they are cached once committed.
func (s *Store) hostNumbers(ctx context.Context, sids []string) (map[string]int64, error) {
	out := make(map[string]int64, len(sids))
	var missing []string
	for _, sid := range sids {
		if _, ok := out[sid]; ok {
			continue
		}
		if n, ok := s.hosts.Load(sid); ok {
			out[sid] = n.(int64)
			continue
		}
		out[sid] = 0
		missing = append(missing, sid)
	}
	for len(missing) > 0 {
		chunk := missing[:min(len(missing), 500)]
		missing = missing[len(chunk):]
		args := make([]any, len(chunk))
		for i, sid := range chunk {
			args[i] = sid
		}
		err := s.inTx(ctx, "numbering hosts", func(tx q) error {
			if _, err := tx.exec(ctx, `INSERT INTO result_hosts (sid) VALUES `+
				strings.TrimSuffix(strings.Repeat("(?), ", len(chunk)), ", ")+` ON CONFLICT (sid) DO NOTHING`, args...); err != nil {
				return err
			}
			rows, err := tx.query(ctx, `SELECT id, sid FROM result_hosts WHERE sid IN (`+placeholders(len(chunk))+`)`, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				var sid string
				if err := rows.Scan(&id, &sid); err != nil {
					return err
				}
				out[sid] = id
			}
			return rows.Err()
		})
		if err != nil {
			return nil, err
		}
		for _, sid := range chunk {
			s.hosts.Store(sid, out[sid])
		}
	}
	return out, nil
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
