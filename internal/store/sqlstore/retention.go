package sqlstore

import (
	"context"
	"fmt"
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
	if !keep.Enabled() {
		return rep, nil
	}
	// rn numbers an incarnation's runs newest first, rn_kind its normal
	// and its check runs separately: rn = 1 is the newest run, check_mode
	// false with rn_kind = 1 the newest normal run (what a resume reads).
	var cond []string
	var args []any
	if keep.MaxCount > 0 {
		cond = append(cond, `r.rn > ?`)
		args = append(args, keep.MaxCount)
	}
	if keep.MaxAge > 0 {
		cond = append(cond, `r.finished_at < ?`)
		args = append(args, s.ts(now.Add(-keep.MaxAge)))
	}
	where := cond[0]
	if len(cond) == 2 {
		where = "(" + cond[0] + " OR " + cond[1] + ")"
	}
	query := `SELECT r.num, r.id FROM (
			SELECT num, id, finished_at, pruned_at, check_mode,
				ROW_NUMBER() OVER (PARTITION BY incarnation ORDER BY created_at DESC, id DESC) AS rn,
				ROW_NUMBER() OVER (PARTITION BY incarnation, check_mode ORDER BY created_at DESC, id DESC) AS rn_kind
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
			return rep, s.wrap("finding runs to prune", err)
		}
		for rows.Next() {
			var num int64
			var id string
			if err := rows.Scan(&num, &id); err != nil {
				rows.Close()
				return rep, s.wrap("finding runs to prune", err)
			}
			nums, ids = append(nums, num), append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return rep, s.wrap("finding runs to prune", err)
		}
		if len(nums) == 0 {
			return s.pruneTextsAfter(ctx, rep)
		}
		found := len(nums)
		for len(nums) > 0 {
			n := min(len(nums), pruneBatch)
			if err := s.pruneRuns(ctx, nums[:n], ids[:n], now, &rep); err != nil {
				return rep, err
			}
			nums, ids = nums[n:], ids[n:]
		}
		if found < pruneScan {
			return s.pruneTextsAfter(ctx, rep)
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

// pruneTextsAfter deletes the result texts left unused by a prune (or by
// deleted incarnations) and adds them to rep.
func (s *Store) pruneTextsAfter(ctx context.Context, rep store.PruneReport) (store.PruneReport, error) {
	n, err := s.pruneTexts(ctx)
	rep.Texts += n
	return rep, err
}
