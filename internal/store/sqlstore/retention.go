package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// pruneBatch is how many runs one prune transaction handles, so that runs
// recording results are not held up behind a long delete; pruneScan is
// how many candidates one look over the runs finds.
const (
	pruneBatch = 200
	pruneScan  = 5000
)

// PruneResults deletes the per-host results and notes of the finished
// runs that keep no longer keeps, pruneBatch runs per transaction.
func (s *Store) PruneResults(ctx context.Context, keep store.RunRetention, now time.Time) (store.PruneReport, error) {
	var rep store.PruneReport
	if keep.ResultsEnabled() {
		if err := s.pruneResults(ctx, keep, now, &rep); err != nil {
			return rep, err
		}
	}
	if keep.RecordsEnabled() {
		if err := s.pruneRecords(ctx, keep, now, &rep); err != nil {
			return rep, err
		}
	}
	if !keep.Enabled() {
		return rep, nil
	}
	n, err := s.pruneTexts(ctx)
	rep.Texts += n
	return rep, err
}

// beyond is the condition (and its arguments) of a row past a retention:
// numbered over count (rnCol, newest first) or older than age (atCol).
// A zero count or age does not bound; one of them is set.
func (s *Store) beyond(rnCol, atCol string, count int, age time.Duration, now time.Time) (string, []any) {
	var cond []string
	var args []any
	if count > 0 {
		cond = append(cond, rnCol+` > ?`)
		args = append(args, count)
	}
	if age > 0 {
		cond = append(cond, atCol+` < ?`)
		args = append(args, s.ts(now.Add(-age)))
	}
	return "(" + strings.Join(cond, " OR ") + ")", args
}

// pruneResults deletes the per-host results and notes of the finished
// runs that keep no longer keeps, pruneBatch runs per transaction.
func (s *Store) pruneResults(ctx context.Context, keep store.RunRetention, now time.Time, rep *store.PruneReport) error {
	// rn numbers an incarnation's runs newest first, rn_kind its normal
	// and its check runs separately: rn = 1 is the newest run, check_mode
	// false with rn_kind = 1 the newest normal run (what a resume reads).
	where, args := s.beyond("r.rn", "r.finished_at", keep.MaxCount, keep.MaxAge, now)
	query := `SELECT r.num, r.id FROM (
			SELECT num, id, finished_at, pruned_at, check_mode,
				ROW_NUMBER() OVER (PARTITION BY incarnation ORDER BY num DESC) AS rn,
				ROW_NUMBER() OVER (PARTITION BY incarnation, check_mode ORDER BY num DESC) AS rn_kind
			FROM runs) r
		WHERE r.finished_at IS NOT NULL AND r.pruned_at IS NULL AND r.rn > 1 AND (r.check_mode = ? OR r.rn_kind > 1)
			AND ` + where + `
			AND NOT EXISTS (SELECT 1 FROM pending_triggers t WHERE t.run_id = r.id)
			AND r.id NOT IN (SELECT u.resumed_from FROM runs u WHERE u.status IN ` + unfinished + `)
		ORDER BY r.num LIMIT ?`
	args = append([]any{true}, args...)
	args = append(args, pruneScan)
	for {
		var nums []any
		var ids []any
		rows, err := s.r.QueryContext(ctx, s.rebind(query), args...)
		if err != nil {
			return s.wrap("finding runs to prune", err)
		}
		for rows.Next() {
			var num int64
			var id string
			if err := rows.Scan(&num, &id); err != nil {
				rows.Close()
				return s.wrap("finding runs to prune", err)
			}
			nums, ids = append(nums, num), append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.wrap("finding runs to prune", err)
		}
		if len(nums) == 0 {
			return nil
		}
		found := len(nums)
		for len(nums) > 0 {
			n := min(len(nums), pruneBatch)
			if err := s.pruneRuns(ctx, nums[:n], ids[:n], now, rep); err != nil {
				return err
			}
			nums, ids = nums[n:], ids[n:]
		}
		if found < pruneScan {
			return nil
		}
	}
}

// pruneRuns deletes the results and notes of runs (nums and ids of the
// same runs) and marks them pruned, in one transaction.
func (s *Store) pruneRuns(ctx context.Context, nums, ids []any, now time.Time, rep *store.PruneReport) error {
	return s.inTx(ctx, "pruning run results", func(tx q) error {
		n, err := tx.affected(ctx, `DELETE FROM run_results WHERE run IN (`+placeholders(len(nums))+`)`, nums...)
		if err != nil {
			return fmt.Errorf("deleting results: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM run_notes WHERE run_id IN (`+placeholders(len(ids))+`)`, ids...); err != nil {
			return fmt.Errorf("deleting notes: %w", err)
		}
		if _, err := tx.exec(ctx, `UPDATE runs SET pruned_at = ? WHERE num IN (`+placeholders(len(nums))+`)`,
			append([]any{s.ts(now)}, nums...)...); err != nil {
			return fmt.Errorf("marking runs pruned: %w", err)
		}
		rep.Runs += len(nums)
		rep.Results += int(n)
		return nil
	})
}

// pruneRecords deletes the history entries and then the run records
// keep.RecordMaxAge and keep.RecordMaxCount no longer keep (see
// store.RunRetention), pruneBatch rows per transaction.
func (s *Store) pruneRecords(ctx context.Context, keep store.RunRetention, now time.Time, rep *store.PruneReport) error {
	where, bargs := s.beyond("x.rn", "x.at", keep.RecordMaxCount, keep.RecordMaxAge, now)

	// History: an incarnation's newest entry is its committed state's.
	hq := `SELECT x.id FROM (
			SELECT id, created_at AS at, ROW_NUMBER() OVER (PARTITION BY incarnation ORDER BY id DESC) AS rn
			FROM history) x
		WHERE x.rn > 1 AND ` + where + ` ORDER BY x.id LIMIT ?`
	for {
		ids, err := s.pruneIDs(ctx, hq, append(append([]any{}, bargs...), pruneBatch))
		if err != nil {
			return s.wrap("finding history entries to prune", err)
		}
		if len(ids) == 0 {
			break
		}
		n, err := s.write(ctx, `DELETE FROM history WHERE id IN (`+placeholders(len(ids))+`)`, ids...)
		if err != nil {
			return s.wrap("pruning history entries", err)
		}
		rep.History += int(n)
		if len(ids) < pruneBatch {
			break
		}
	}

	// Runs: what the results keep, and a run a kept history entry names.
	rq := `SELECT x.num FROM (
			SELECT num, id, finished_at AS at, check_mode,
				ROW_NUMBER() OVER (PARTITION BY incarnation ORDER BY num DESC) AS rn,
				ROW_NUMBER() OVER (PARTITION BY incarnation, check_mode ORDER BY num DESC) AS rn_kind
			FROM runs) x
		WHERE x.at IS NOT NULL AND x.rn > 1 AND (x.check_mode = ? OR x.rn_kind > 1) AND ` + where + `
			AND NOT EXISTS (SELECT 1 FROM pending_triggers t WHERE t.run_id = x.id)
			AND NOT EXISTS (SELECT 1 FROM history h WHERE h.run_id = x.id)
			AND x.id NOT IN (SELECT u.resumed_from FROM runs u WHERE u.status IN ` + unfinished + `)
		ORDER BY x.num LIMIT ?`
	for {
		nums, err := s.pruneIDs(ctx, rq, append(append([]any{true}, bargs...), pruneBatch))
		if err != nil {
			return s.wrap("finding run records to prune", err)
		}
		if len(nums) == 0 {
			return nil
		}
		n, err := s.write(ctx, `DELETE FROM runs WHERE num IN (`+placeholders(len(nums))+`)`, nums...)
		if err != nil {
			return s.wrap("pruning run records", err)
		}
		rep.Records += int(n)
		if len(nums) < pruneBatch {
			return nil
		}
	}
}

// pruneIDs reads the integer keys query selects.
func (s *Store) pruneIDs(ctx context.Context, query string, args []any) ([]any, error) {
	rows, err := s.r.QueryContext(ctx, s.rebind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
