package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

const runCols = `id, incarnation, scenario, input, check_mode, status, error, archon_id, keeper_id,
	resumed_from, service_commit, members, drift, upgrade_ref, created_at, started_at, finished_at, pruned_at`

// unfinished is the SQL list of run statuses that still hold the run slot.
const unfinished = `('` + store.RunPending + `', '` + store.RunRunning + `')`

func scanRun(sc interface{ Scan(...any) error }) (store.Run, error) {
	var r store.Run
	err := sc.Scan(&r.ID, &r.Incarnation, &r.Scenario, mapCol{m: &r.Input}, &r.Check, &r.Status, &r.Error,
		&r.ArchonID, &r.KeeperID, &r.ResumedFrom, &r.Commit, listCol{&r.Members}, &r.Drift, &r.UpgradeRef,
		timeCol{&r.CreatedAt}, nullTimeCol{&r.StartedAt}, nullTimeCol{&r.FinishedAt}, nullTimeCol{&r.ResultsPrunedAt})
	if len(r.Members) == 0 {
		r.Members = nil
	}
	return r, err
}

// insertRun inserts run (status "" is pending).
func (s *Store) insertRun(ctx context.Context, tx q, r store.Run) error {
	if r.ID == "" {
		return invalid("run id is empty")
	}
	if r.Status == "" {
		r.Status = store.RunPending
	}
	if r.Status != store.RunPending && r.Status != store.RunRunning {
		return invalid("a new run must be %s or %s, not %q", store.RunPending, store.RunRunning, r.Status)
	}
	input, err := optMap(r.Input)
	if err != nil {
		return err
	}
	var members any
	if r.Members != nil {
		members = strList(r.Members)
	}
	if _, err := tx.exec(ctx, `INSERT INTO runs (`+runCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Incarnation, r.Scenario, input, r.Check, r.Status, r.Error, r.ArchonID, r.KeeperID,
		r.ResumedFrom, r.Commit, members, r.Drift, r.UpgradeRef, s.ts(s.orNow(r.CreatedAt)), s.tsPtr(r.StartedAt), s.tsPtr(r.FinishedAt), nil); err != nil {
		if s.d.Classify(err) == ClassUnique {
			return conflict(nil, "run %s already exists", r.ID)
		}
		return err
	}
	return nil
}

// StartRun takes the incarnation's run slot for run and inserts it.
func (s *Store) StartRun(ctx context.Context, r store.Run) error {
	op := "starting run on " + r.Incarnation
	if r.ID == "" {
		return s.wrap(op, invalid("run id is empty"))
	}
	return s.inTx(ctx, op, func(tx q) error {
		now := s.ts(s.now())
		// A check run changes nothing, so it leaves the status alone.
		set, args := `active_run = ?, status = ?, updated_at = ?`, []any{r.ID, store.IncarnationApplying, now}
		if r.Check {
			set, args = `active_run = ?, updated_at = ?`, []any{r.ID, now}
		}
		// A resume unlocks the incarnation it starts on; any other run
		// refuses a locked one.
		locked := `status <> ?`
		if r.ResumedFrom != "" {
			set += `, lock_reason = ''`
			locked = `status = ?`
		}
		args = append(args, r.Incarnation, store.IncarnationErrorLocked)
		n, err := tx.affected(ctx, `UPDATE incarnations SET `+set+`
			WHERE name = ? AND active_run IS NULL AND `+locked, args...)
		if err != nil {
			return err
		}
		if n == 0 {
			status, active, reason, err := incarnationSlot(ctx, tx, r.Incarnation)
			switch {
			case err != nil:
				return err
			case active != "":
				return busy(r.Incarnation, active)
			case r.ResumedFrom != "" && status != store.IncarnationErrorLocked:
				return conflict(nil, "incarnation %q is %s, not error_locked: only a locked incarnation's failed run can be resumed", r.Incarnation, status)
			case r.ResumedFrom == "" && status == store.IncarnationErrorLocked:
				return conflict(nil, "incarnation %q is error_locked (%s): unlock it first", r.Incarnation, reason)
			}
			return fmt.Errorf("incarnation %q refused the run in status %s", r.Incarnation, status)
		}
		return s.insertRun(ctx, tx, r)
	})
}

// GetRun returns the run with id.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.reader().row(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, notFound("run", id)
	}
	return r, s.wrap("reading run", err)
}

// ListRuns returns the runs of incarnation ("" = all), newest first: in
// the order they were recorded (runs.num), which a step of the wall clock
// does not change.
func (s *Store) ListRuns(ctx context.Context, incarnation string, limit int) ([]store.Run, error) {
	query := `SELECT ` + runCols + ` FROM runs`
	var args []any
	if incarnation != "" {
		query += ` WHERE incarnation = ?`
		args = append(args, incarnation)
	}
	lim, args := limitClause(limit, args)
	rows, err := s.reader().query(ctx, query+` ORDER BY num DESC`+lim, args...)
	if err != nil {
		return nil, s.wrap("listing runs", err)
	}
	out, err := collect(rows, scanRun)
	return out, s.wrap("listing runs", err)
}

// runGone explains why an update of an unfinished run matched nothing:
// the run does not exist, has finished already, or (for CommitRun) is a
// check run. Details of the conflict is the run's status.
func runGone(ctx context.Context, tx q, id string) error {
	var status string
	var check bool
	err := tx.row(ctx, `SELECT status, check_mode FROM runs WHERE id = ?`, id).Scan(&status, &check)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return notFound("run", id)
	case err != nil:
		return err
	case status != store.RunPending && status != store.RunRunning:
		return conflict(status, "run %s is already %s", id, status)
	case check:
		return conflict(status, "run %s is a check run: it commits nothing", id)
	}
	return fmt.Errorf("run %s refused the change in status %s", id, status)
}

// SetRunStatus moves an unfinished run to pending or running.
func (s *Store) SetRunStatus(ctx context.Context, id, status string, at time.Time) error {
	if status != store.RunPending && status != store.RunRunning {
		return s.wrap("setting run status", invalid("SetRunStatus takes %s or %s, not %q (finish runs with CommitRun, FinishRun or AbortRuns)",
			store.RunPending, store.RunRunning, status))
	}
	return s.inTx(ctx, "setting run status", func(tx q) error {
		set, args := `status = ?`, []any{status}
		if status == store.RunRunning {
			set += `, started_at = COALESCE(started_at, ?)`
			args = append(args, s.ts(at))
		}
		n, err := tx.affected(ctx, `UPDATE runs SET `+set+` WHERE id = ? AND status IN `+unfinished, append(args, id)...)
		if err != nil || n > 0 {
			return err
		}
		return runGone(ctx, tx, id)
	})
}

// CommitRun commits a successful run: state, snapshot, run status and
// incarnation status in one transaction.
func (s *Store) CommitRun(ctx context.Context, runID string, state map[string]any, snap store.Snapshot, at time.Time) error {
	stateJSON, err := reqMap(state)
	if err != nil {
		return s.wrap("committing run "+runID, err)
	}
	summary, err := reqMap(snap.Summary)
	if err != nil {
		return s.wrap("committing run "+runID, err)
	}
	return s.inTx(ctx, "committing run "+runID, func(tx q) error {
		var inc, scenario, upgradeRef, commit string
		err := tx.row(ctx, `UPDATE runs SET status = ?, error = '', finished_at = ?
			WHERE id = ? AND status IN `+unfinished+` AND check_mode = ? RETURNING incarnation, scenario, upgrade_ref, service_commit`,
			store.RunSucceeded, s.ts(at), runID, false).Scan(&inc, &scenario, &upgradeRef, &commit)
		if errors.Is(err, sql.ErrNoRows) {
			return runGone(ctx, tx, runID)
		}
		if err != nil {
			return err
		}
		set, args := ``, []any{stateJSON, strMap(snap.SealedState), store.IncarnationReady, s.ts(at)}
		if upgradeRef != "" {
			set, args = `, ref = ?, commit_id = ?`, append(args, upgradeRef, commit)
		}
		n, err := tx.affected(ctx, `UPDATE incarnations SET state = ?, sealed_state = ?, status = ?, active_run = NULL, lock_reason = '',
			updated_at = ?`+set+` WHERE name = ? AND active_run = ?`, append(args, inc, runID)...)
		if err != nil {
			return err
		}
		if n == 0 {
			return conflict(nil, "run %s is not the active run of incarnation %q", runID, inc)
		}
		if snap.Incarnation == "" {
			snap.Incarnation = inc
		}
		if snap.RunID == "" {
			snap.RunID = runID
		}
		if snap.Scenario == "" {
			snap.Scenario = scenario
		}
		if snap.CreatedAt.IsZero() {
			snap.CreatedAt = at
		}
		_, err = tx.exec(ctx, `INSERT INTO history (incarnation, run_id, scenario, state, summary, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, snap.Incarnation, snap.RunID, snap.Scenario, stateJSON, summary, s.ts(snap.CreatedAt))
		return err
	})
}

// FinishRun ends an unfinished run without committing state.
func (s *Store) FinishRun(ctx context.Context, runID, status, errMsg string, at time.Time) error {
	op := "finishing run " + runID
	switch status {
	case store.RunSucceeded, store.RunFailed, store.RunAborted, store.RunCancelled:
	default:
		return s.wrap(op, invalid("FinishRun takes a terminal status, not %q", status))
	}
	return s.inTx(ctx, op, func(tx q) error {
		var inc string
		var check bool
		err := tx.row(ctx, `UPDATE runs SET status = ?, error = ?, finished_at = ?
			WHERE id = ? AND status IN `+unfinished+` RETURNING incarnation, check_mode`,
			status, errMsg, s.ts(at), runID).Scan(&inc, &check)
		if errors.Is(err, sql.ErrNoRows) {
			return runGone(ctx, tx, runID)
		}
		if err != nil {
			return err
		}
		return s.releaseSlot(ctx, tx, inc, runID, check, status, errMsg, at)
	})
}

// releaseSlot clears the incarnation's active run runID and sets the status
// the run's outcome leaves it in: unchanged after a check run, ready after
// success, error_locked (with a reason naming the run) otherwise.
func (s *Store) releaseSlot(ctx context.Context, tx q, inc, runID string, check bool, status, errMsg string, at time.Time) error {
	set, args := `active_run = NULL, updated_at = ?`, []any{s.ts(at)}
	switch {
	case check:
	case status == store.RunSucceeded:
		set += `, status = ?, lock_reason = ''`
		args = append(args, store.IncarnationReady)
	default:
		reason := fmt.Sprintf("run %s %s", runID, status)
		if errMsg != "" {
			reason += ": " + errMsg
		}
		set += `, status = ?, lock_reason = ?`
		args = append(args, store.IncarnationErrorLocked, reason)
	}
	_, err := tx.exec(ctx, `UPDATE incarnations SET `+set+` WHERE name = ? AND active_run = ?`, append(args, inc, runID)...)
	return err
}

// abortError is the error recorded on runs aborted by AbortRuns.
const abortError = "the keeper running it stopped before it finished; state is uncertain"

// AbortRuns aborts the unfinished runs of keeperID ("" = all) and locks
// their incarnations.
func (s *Store) AbortRuns(ctx context.Context, keeperID string, at time.Time) ([]store.Run, error) {
	var runs []store.Run
	err := s.inTx(ctx, "aborting runs", func(tx q) error {
		query := `UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE status IN ` + unfinished
		args := []any{store.RunAborted, abortError, s.ts(at)}
		if keeperID != "" {
			query += ` AND keeper_id = ?`
			args = append(args, keeperID)
		}
		rows, err := tx.query(ctx, query+` RETURNING `+runCols, args...)
		if err != nil {
			return err
		}
		if runs, err = collect(rows, scanRun); err != nil {
			return err
		}
		slices.SortFunc(runs, func(a, b store.Run) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, r := range runs {
			if err := s.releaseSlot(ctx, tx, r.Incarnation, r.ID, r.Check, store.RunAborted, abortError, at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// ListHistory returns the incarnation's snapshots, newest first.
func (s *Store) ListHistory(ctx context.Context, incarnation string, limit int) ([]store.Snapshot, error) {
	return s.listHistory(ctx, incarnation, 0, limit)
}

func (s *Store) listHistory(ctx context.Context, incarnation string, before int64, limit int) ([]store.Snapshot, error) {
	where, args := `h.incarnation = ?`, []any{incarnation}
	if before > 0 {
		where, args = where+` AND h.id < ?`, append(args, before)
	}
	lim, args := limitClause(limit, args)
	rows, err := s.reader().query(ctx, `SELECT h.id, h.incarnation, h.run_id, h.scenario, h.state, h.summary,
		COALESCE(r.resumed_from, ''), h.created_at
		FROM history h LEFT JOIN runs r ON r.id = h.run_id
		WHERE `+where+` ORDER BY h.id DESC`+lim, args...)
	if err != nil {
		return nil, s.wrap("listing history", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.Snapshot, error) {
		var sn store.Snapshot
		err := sc.Scan(&sn.ID, &sn.Incarnation, &sn.RunID, &sn.Scenario, mapCol{m: &sn.State, required: true},
			mapCol{m: &sn.Summary, required: true}, &sn.ResumedFrom, timeCol{&sn.CreatedAt})
		return sn, err
	})
	return out, s.wrap("listing history", err)
}
