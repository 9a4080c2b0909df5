package sqlstore

import (
	"context"

	"github.com/soulstack/soulstack/internal/store"
)

// PageSouls returns one page of the souls matching q, sorted by SID. The
// SID cursor and prefix use the primary key; a fact filter reads the
// soulprint of the rows the other filters leave.
func (s *Store) PageSouls(ctx context.Context, sq store.SoulQuery) (store.SoulPage, error) {
	const op = "listing souls"
	limit := store.PageLimit(sq.Limit)
	where, args, err := s.soulWhere(sq)
	if err != nil {
		return store.SoulPage{}, s.wrap(op, err)
	}
	page := store.SoulPage{}
	if sq.Count {
		if err := s.reader().row(ctx, `SELECT COUNT(*) FROM souls WHERE 1 = 1`+where, args...).Scan(&page.Total); err != nil {
			return store.SoulPage{}, s.wrap(op, err)
		}
	}
	query := `SELECT ` + soulCols + ` FROM souls WHERE 1 = 1` + where
	if sq.After != "" {
		query += ` AND sid > ?`
		args = append(args, sq.After)
	}
	// One row more than the page tells whether another page follows.
	query += ` ORDER BY sid LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return store.SoulPage{}, s.wrap(op, err)
	}
	souls, err := collect(rows, scanSoul)
	if err != nil {
		return store.SoulPage{}, s.wrap(op, err)
	}
	page.Souls = souls
	if len(souls) > limit {
		page.Souls = souls[:limit]
		page.Next = souls[limit-1].SID
	}
	return page, nil
}

// soulWhere is the WHERE conditions (each starting with AND) and arguments
// of sq's filters, without the cursor.
func (s *Store) soulWhere(sq store.SoulQuery) (string, []any, error) {
	query := ""
	var args []any
	if sq.Status != "" {
		query += ` AND status = ?`
		args = append(args, sq.Status)
	}
	if sq.SIDPrefix != "" {
		// A range on the key: every SID starting with the prefix sorts
		// between it and it followed by the largest code point.
		query += ` AND sid >= ? AND sid < ?`
		args = append(args, sq.SIDPrefix, sq.SIDPrefix+"\U0010FFFF")
	}
	if covens := sortedSet(sq.Covens); len(covens) > 0 {
		query += ` AND sid IN (SELECT sid FROM soul_covens WHERE coven IN (` + placeholders(len(covens)) + `)
			GROUP BY sid HAVING COUNT(*) = ?)`
		for _, c := range covens {
			args = append(args, c)
		}
		args = append(args, len(covens))
	}
	if sq.Visible {
		if covens := sortedSet(sq.VisibleCovens); len(covens) > 0 {
			query += ` AND sid IN (SELECT sid FROM soul_covens WHERE coven IN (` + placeholders(len(covens)) + `))`
			for _, c := range covens {
				args = append(args, c)
			}
		} else {
			query += ` AND 1 = 0`
		}
	}
	if sq.Fact != "" {
		keys, err := store.FactPath(sq.Fact)
		if err != nil {
			return "", nil, invalid("%v", err)
		}
		expr, eargs := s.d.FactText("soulprint", keys)
		args = append(args, eargs...)
		if sq.FactValue == "" {
			query += ` AND ` + expr + ` IS NOT NULL`
		} else {
			query += ` AND ` + expr + ` = ?`
			args = append(args, sq.FactValue)
		}
	}
	return query, args, nil
}

// PageRuns returns one page of the runs matching q, newest first (in the
// order they were recorded, see ListRuns).
func (s *Store) PageRuns(ctx context.Context, rq store.RunQuery) (store.RunPage, error) {
	const op = "listing runs"
	limit := store.PageLimit(rq.Limit)
	query := `SELECT ` + runCols + ` FROM runs WHERE 1 = 1`
	var args []any
	if rq.Incarnation != "" {
		query += ` AND incarnation = ?`
		args = append(args, rq.Incarnation)
	}
	if rq.Status != "" {
		query += ` AND status = ?`
		args = append(args, rq.Status)
	}
	if rq.Visible {
		if incs := sortedSet(rq.VisibleIncarnations); len(incs) > 0 {
			query += ` AND incarnation IN (` + placeholders(len(incs)) + `)`
			for _, i := range incs {
				args = append(args, i)
			}
		} else {
			query += ` AND 1 = 0`
		}
	}
	if rq.Scenario != "" {
		query += ` AND scenario = ?`
		args = append(args, rq.Scenario)
	}
	if rq.Before != "" {
		id, err := store.ParseRunCursor(rq.Before)
		if err != nil {
			return store.RunPage{}, s.wrap(op, invalid("%v", err))
		}
		query += ` AND num < (SELECT c.num FROM runs c WHERE c.id = ?)`
		args = append(args, id)
	}
	query += ` ORDER BY num DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return store.RunPage{}, s.wrap(op, err)
	}
	runs, err := collect(rows, scanRun)
	if err != nil {
		return store.RunPage{}, s.wrap(op, err)
	}
	page := store.RunPage{Runs: runs}
	if len(runs) > limit {
		page.Runs = runs[:limit]
		page.Next = store.RunCursor(runs[limit-1])
	}
	return page, nil
}

// CountRuns counts the runs by status (statuses without runs are absent),
// without reading them.
func (s *Store) CountRuns(ctx context.Context) (map[string]int, error) {
	return s.countByStatus(ctx, "runs")
}

// CountIncarnations counts the incarnations by status (statuses without
// incarnations are absent), without reading them.
func (s *Store) CountIncarnations(ctx context.Context) (map[string]int, error) {
	return s.countByStatus(ctx, "incarnations")
}

// countByStatus counts the rows of table (a constant of this package) by
// their status column.
func (s *Store) countByStatus(ctx context.Context, table string) (map[string]int, error) {
	what := "counting " + table
	rows, err := s.reader().query(ctx, `SELECT status, COUNT(*) FROM `+table+` GROUP BY status`)
	if err != nil {
		return nil, s.wrap(what, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, s.wrap(what, err)
		}
		out[st] = n
	}
	return out, s.wrap(what, rows.Err())
}

// IncarnationNames lists the names of at most limit (bounded by
// store.PageLimit) incarnations in status, sorted.
func (s *Store) IncarnationNames(ctx context.Context, status string, limit int) ([]string, error) {
	rows, err := s.reader().query(ctx, `SELECT name FROM incarnations WHERE status = ? ORDER BY name LIMIT ?`,
		status, store.PageLimit(limit))
	if err != nil {
		return nil, s.wrap("listing incarnations", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (string, error) {
		var n string
		err := sc.Scan(&n)
		return n, err
	})
	return out, s.wrap("listing incarnations", err)
}

// ListCovens lists the distinct covens souls carry, sorted (at most
// store.MaxPageLimit).
func (s *Store) ListCovens(ctx context.Context) ([]string, error) {
	rows, err := s.reader().query(ctx, `SELECT DISTINCT coven FROM soul_covens ORDER BY coven LIMIT ?`, store.MaxPageLimit)
	if err != nil {
		return nil, s.wrap("listing covens", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (string, error) {
		var c string
		err := sc.Scan(&c)
		return c, err
	})
	return out, s.wrap("listing covens", err)
}
