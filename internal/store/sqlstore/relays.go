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

// relayCols are a row's columns but its work; relayColsWork adds it.
const (
	relayCols     = `id, from_keeper, to_keeper, sid, run_id, task_id, status, result, deadline, created_at, finished_at`
	relayColsWork = relayCols + `, work`
)

func scanRelay(sc interface{ Scan(...any) error }) (store.RelayWork, error) {
	var w store.RelayWork
	err := sc.Scan(&w.ID, &w.FromKeeper, &w.ToKeeper, &w.SID, &w.RunID, &w.TaskID, &w.Status, &w.Result,
		timeCol{&w.Deadline}, timeCol{&w.CreatedAt}, nullTimeCol{&w.FinishedAt})
	return w, err
}

func scanRelayWork(sc interface{ Scan(...any) error }) (store.RelayWork, error) {
	var w store.RelayWork
	err := sc.Scan(&w.ID, &w.FromKeeper, &w.ToKeeper, &w.SID, &w.RunID, &w.TaskID, &w.Status, &w.Result,
		timeCol{&w.Deadline}, timeCol{&w.CreatedAt}, nullTimeCol{&w.FinishedAt}, &w.Work)
	if w.Work == nil {
		w.Work = []byte{}
	}
	return w, err
}

func relayKey(id int64) string { return strconv.FormatInt(id, 10) }

// CreateRelay inserts w as pending and returns its id.
func (s *Store) CreateRelay(ctx context.Context, w store.RelayWork) (int64, error) {
	op := "relaying work for soul " + w.SID
	switch {
	case w.FromKeeper == "" || w.ToKeeper == "":
		return 0, s.wrap(op, invalid("a relay needs both keepers"))
	case w.SID == "":
		return 0, s.wrap(op, invalid("a relay needs a soul"))
	}
	work := w.Work
	if work == nil {
		work = []byte{}
	}
	var id int64
	err := q{s: s, db: s.w}.row(ctx, `INSERT INTO relays
		(from_keeper, to_keeper, sid, run_id, task_id, work, status, deadline, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		w.FromKeeper, w.ToKeeper, w.SID, w.RunID, w.TaskID, work, store.RelayPending,
		s.ts(w.Deadline), s.ts(s.orNow(w.CreatedAt))).Scan(&id)
	return id, s.wrap(op, err)
}

// ClaimRelay moves a pending row addressed to keeperID to claimed.
func (s *Store) ClaimRelay(ctx context.Context, id int64, keeperID string) (store.RelayWork, error) {
	op := "claiming relay " + relayKey(id)
	w, err := scanRelayWork(q{s: s, db: s.w}.row(ctx, `UPDATE relays SET status = ?
		WHERE id = ? AND to_keeper = ? AND status = ? RETURNING `+relayColsWork,
		store.RelayClaimed, id, keeperID, store.RelayPending))
	if errors.Is(err, sql.ErrNoRows) {
		cur, gerr := s.getRelay(ctx, id)
		switch {
		case gerr != nil:
			return store.RelayWork{}, s.wrap(op, gerr)
		case cur.ToKeeper != keeperID:
			return store.RelayWork{}, conflict(nil, "%s: addressed to keeper %s", op, cur.ToKeeper)
		default:
			return store.RelayWork{}, conflict(nil, "%s: it is %s", op, cur.Status)
		}
	}
	return w, s.wrap(op, err)
}

// FinishRelay marks an unfinished row done with result.
func (s *Store) FinishRelay(ctx context.Context, id int64, result []byte, at time.Time) (store.RelayWork, error) {
	op := "finishing relay " + relayKey(id)
	if result == nil {
		result = []byte{}
	}
	w, err := scanRelay(q{s: s, db: s.w}.row(ctx, `UPDATE relays SET status = ?, result = ?, finished_at = ?
		WHERE id = ? AND status <> ? RETURNING `+relayCols,
		store.RelayDone, result, s.ts(at), id, store.RelayDone))
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := s.getRelay(ctx, id); gerr != nil {
			return store.RelayWork{}, s.wrap(op, gerr)
		}
		return store.RelayWork{}, conflict(nil, "%s: it is done already", op)
	}
	return w, s.wrap(op, err)
}

// TakeRelay deletes a row and returns it without its work.
func (s *Store) TakeRelay(ctx context.Context, id int64) (store.RelayWork, error) {
	w, err := scanRelay(q{s: s, db: s.w}.row(ctx, `DELETE FROM relays WHERE id = ? RETURNING `+relayCols, id))
	if errors.Is(err, sql.ErrNoRows) {
		return w, notFound("relay", relayKey(id))
	}
	return w, s.wrap("taking relay "+relayKey(id), err)
}

func (s *Store) getRelay(ctx context.Context, id int64) (store.RelayWork, error) {
	w, err := scanRelay(q{s: s, db: s.w}.row(ctx, `SELECT `+relayCols+` FROM relays WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return w, notFound("relay", relayKey(id))
	}
	return w, err
}

// ListRelays lists the rows matching f by id, without work and result.
func (s *Store) ListRelays(ctx context.Context, f store.RelayFilter) ([]store.RelayWork, error) {
	query := `SELECT ` + relayCols + ` FROM relays WHERE 1 = 1`
	var args []any
	for _, c := range []struct{ col, v string }{{"from_keeper", f.FromKeeper}, {"to_keeper", f.ToKeeper}, {"status", f.Status}} {
		if c.v != "" {
			query += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY id`, args...)
	if err != nil {
		return nil, s.wrap("listing relays", err)
	}
	out, err := collect(rows, scanRelay)
	for i := range out {
		out[i].Result = nil
	}
	return out, s.wrap("listing relays", err)
}

// ResetRelays finishes the unfinished rows addressed to keeperID with
// result and deletes the rows it sent.
func (s *Store) ResetRelays(ctx context.Context, keeperID string, result []byte, at time.Time) ([]store.RelayWork, error) {
	if result == nil {
		result = []byte{}
	}
	var out []store.RelayWork
	err := s.inTx(ctx, "resetting relays of keeper "+keeperID, func(tx q) error {
		if _, err := tx.exec(ctx, `DELETE FROM relays WHERE from_keeper = ?`, keeperID); err != nil {
			return err
		}
		rows, err := tx.query(ctx, `UPDATE relays SET status = ?, result = ?, finished_at = ?
			WHERE to_keeper = ? AND status <> ? RETURNING `+relayCols,
			store.RelayDone, result, s.ts(at), keeperID, store.RelayDone)
		if err != nil {
			return err
		}
		out, err = collect(rows, scanRelay)
		return err
	})
	if err != nil {
		return nil, err
	}
	// RETURNING has no ORDER BY.
	slices.SortFunc(out, func(a, b store.RelayWork) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PruneRelays deletes the rows whose deadline is before `before`.
func (s *Store) PruneRelays(ctx context.Context, before time.Time) (int, error) {
	n, err := s.write(ctx, `DELETE FROM relays WHERE deadline < ?`, s.ts(before))
	return int(n), s.wrap("pruning relays", err)
}
