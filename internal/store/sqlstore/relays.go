package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// batchCols are a batch's columns but its work and fallback.
const batchCols = `id, from_keeper, to_keeper, run_id, task, souls, status, deadline, created_at, finished_at`

func scanBatch(sc interface{ Scan(...any) error }, extra ...any) (store.RelayBatch, error) {
	var b store.RelayBatch
	dest := append([]any{&b.ID, &b.FromKeeper, &b.ToKeeper, &b.RunID, &b.Task, &b.Souls, &b.Status,
		timeCol{&b.Deadline}, timeCol{&b.CreatedAt}, nullTimeCol{&b.FinishedAt}}, extra...)
	err := sc.Scan(dest...)
	return b, err
}

func batchKey(id int64) string { return strconv.FormatInt(id, 10) }

// CreateRelayBatch inserts b as pending and returns its id.
func (s *Store) CreateRelayBatch(ctx context.Context, b store.RelayBatch) (int64, error) {
	op := "relaying work to keeper " + b.ToKeeper
	switch {
	case b.FromKeeper == "" || b.ToKeeper == "":
		return 0, s.wrap(op, invalid("a relay needs both keepers"))
	case b.Souls <= 0:
		return 0, s.wrap(op, invalid("a relay needs souls"))
	}
	work := b.Work
	if work == nil {
		work = []byte{}
	}
	var id int64
	err := q{s: s, db: s.w}.row(ctx, `INSERT INTO relay_batches
		(from_keeper, to_keeper, run_id, task, souls, work, status, deadline, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		b.FromKeeper, b.ToKeeper, b.RunID, b.Task, b.Souls, work, store.RelayPending,
		s.ts(b.Deadline), s.ts(s.orNow(b.CreatedAt))).Scan(&id)
	return id, s.wrap(op, err)
}

// ClaimRelayBatch moves a pending batch addressed to keeperID to claimed.
func (s *Store) ClaimRelayBatch(ctx context.Context, id int64, keeperID string) (store.RelayBatch, error) {
	op := "claiming relay batch " + batchKey(id)
	var work []byte
	b, err := scanBatch(q{s: s, db: s.w}.row(ctx, `UPDATE relay_batches SET status = ?
		WHERE id = ? AND to_keeper = ? AND status = ? RETURNING `+batchCols+`, work`,
		store.RelayClaimed, id, keeperID, store.RelayPending), &work)
	if errors.Is(err, sql.ErrNoRows) {
		cur, gerr := s.getBatch(ctx, q{s: s, db: s.w}, id)
		switch {
		case gerr != nil:
			return store.RelayBatch{}, s.wrap(op, gerr)
		case cur.ToKeeper != keeperID:
			return store.RelayBatch{}, conflict(nil, "%s: addressed to keeper %s", op, cur.ToKeeper)
		default:
			return store.RelayBatch{}, conflict(nil, "%s: it is %s", op, cur.Status)
		}
	}
	if work == nil {
		work = []byte{}
	}
	b.Work = work
	return b, s.wrap(op, err)
}

// AddRelayResults appends a results row to an unfinished batch and, with
// final, marks it done.
func (s *Store) AddRelayResults(ctx context.Context, batchID int64, body []byte, souls int, final bool, at time.Time) (store.RelayBatch, error) {
	op := "adding results to relay batch " + batchKey(batchID)
	var out store.RelayBatch
	err := s.inTx(ctx, op, func(tx q) error {
		// The conditional UPDATE locks the batch row: a concurrent delete
		// (the sender giving up) waits, or makes this find nothing.
		set, args := `status = status`, []any{}
		if final {
			set, args = `status = ?, finished_at = ?`, []any{store.RelayDone, s.ts(at)}
		}
		b, err := scanBatch(tx.row(ctx, `UPDATE relay_batches SET `+set+`
			WHERE id = ? AND status <> ? RETURNING `+batchCols,
			append(args, batchID, store.RelayDone)...))
		if errors.Is(err, sql.ErrNoRows) {
			if _, gerr := s.getBatch(ctx, tx, batchID); gerr != nil {
				return gerr
			}
			return conflict(nil, "%s: it is done already", op)
		}
		if err != nil {
			return err
		}
		out = b
		if len(body) == 0 {
			return nil
		}
		_, err = tx.exec(ctx, `INSERT INTO relay_results (batch_id, souls, body, created_at) VALUES (?, ?, ?, ?)`,
			batchID, souls, body, s.ts(at))
		return err
	})
	return out, err
}

// TakeRelayResults reads the batch, then deletes and returns its results.
func (s *Store) TakeRelayResults(ctx context.Context, batchID int64) (store.RelayBatch, []store.RelayResults, error) {
	op := "taking results of relay batch " + batchKey(batchID)
	// Two statements in this order, without a transaction: a batch read
	// done had its last results committed before, so the DELETE sees them.
	c := q{s: s, db: s.w}
	b, err := s.getBatch(ctx, c, batchID)
	if err != nil {
		return b, nil, s.wrap(op, err)
	}
	rows, err := c.query(ctx, `DELETE FROM relay_results WHERE batch_id = ?
		RETURNING id, batch_id, souls, body, created_at`, batchID)
	if err != nil {
		return b, nil, s.wrap(op, err)
	}
	res, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.RelayResults, error) {
		var r store.RelayResults
		err := sc.Scan(&r.ID, &r.BatchID, &r.Souls, &r.Body, timeCol{&r.CreatedAt})
		return r, err
	})
	if err != nil {
		return b, nil, s.wrap(op, err)
	}
	// RETURNING has no ORDER BY.
	slices.SortFunc(res, func(a, b store.RelayResults) int { return cmp.Compare(a.ID, b.ID) })
	return b, res, nil
}

// DeleteRelayBatch deletes a batch and its results.
func (s *Store) DeleteRelayBatch(ctx context.Context, id int64) (store.RelayBatch, error) {
	op := "deleting relay batch " + batchKey(id)
	var out store.RelayBatch
	err := s.inTx(ctx, op, func(tx q) error {
		b, err := scanBatch(tx.row(ctx, `DELETE FROM relay_batches WHERE id = ? RETURNING `+batchCols, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("relay batch", batchKey(id))
		}
		if err != nil {
			return err
		}
		out = b
		_, err = tx.exec(ctx, `DELETE FROM relay_results WHERE batch_id = ?`, id)
		return err
	})
	return out, err
}

func (s *Store) getBatch(ctx context.Context, c q, id int64) (store.RelayBatch, error) {
	var fallback []byte
	b, err := scanBatch(c.row(ctx, `SELECT `+batchCols+`, fallback FROM relay_batches WHERE id = ?`, id), &fallback)
	if errors.Is(err, sql.ErrNoRows) {
		return b, notFound("relay batch", batchKey(id))
	}
	b.Fallback = fallback
	return b, err
}

// ListRelayBatches lists the batches matching f by id, without work and
// fallback.
func (s *Store) ListRelayBatches(ctx context.Context, f store.RelayFilter) ([]store.RelayBatch, error) {
	query := `SELECT ` + batchCols + ` FROM relay_batches WHERE 1 = 1`
	var args []any
	for _, c := range []struct{ col, v string }{{"from_keeper", f.FromKeeper}, {"to_keeper", f.ToKeeper}, {"status", f.Status}} {
		if c.v != "" {
			query += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY id`, args...)
	if err != nil {
		return nil, s.wrap("listing relay batches", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.RelayBatch, error) { return scanBatch(sc) })
	return out, s.wrap("listing relay batches", err)
}

// ResetRelays finishes the unfinished batches addressed to keeperID with
// fallback and deletes the batches it sent, with their results.
func (s *Store) ResetRelays(ctx context.Context, keeperID string, fallback []byte, at time.Time) ([]store.RelayBatch, error) {
	if fallback == nil {
		fallback = []byte{}
	}
	var out []store.RelayBatch
	err := s.inTx(ctx, "resetting relays of keeper "+keeperID, func(tx q) error {
		if _, err := tx.exec(ctx, `DELETE FROM relay_results WHERE batch_id IN
			(SELECT id FROM relay_batches WHERE from_keeper = ?)`, keeperID); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM relay_batches WHERE from_keeper = ?`, keeperID); err != nil {
			return err
		}
		rows, err := tx.query(ctx, `UPDATE relay_batches SET status = ?, fallback = ?, finished_at = ?
			WHERE to_keeper = ? AND status <> ? RETURNING `+batchCols,
			store.RelayDone, fallback, s.ts(at), keeperID, store.RelayDone)
		if err != nil {
			return err
		}
		out, err = collect(rows, func(sc interface{ Scan(...any) error }) (store.RelayBatch, error) { return scanBatch(sc) })
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.RelayBatch) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PruneRelays deletes the batches whose deadline is before `before`, with
// their results.
func (s *Store) PruneRelays(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.inTx(ctx, "pruning relays", func(tx q) error {
		if _, err := tx.exec(ctx, `DELETE FROM relay_results WHERE batch_id IN
			(SELECT id FROM relay_batches WHERE deadline < ?)`, s.ts(before)); err != nil {
			return err
		}
		var err error
		n, err = tx.affected(ctx, `DELETE FROM relay_batches WHERE deadline < ?`, s.ts(before))
		return err
	})
	return int(n), err
}
