package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/soulstack/soulstack/internal/store"
)

const incarnationCols = `name, service, ref, commit_id, covens, input, essence, status, state, active_run,
	lock_reason, created_at, updated_at, sealed_state`

func scanIncarnation(sc interface{ Scan(...any) error }) (store.Incarnation, error) {
	var inc store.Incarnation
	var active sql.NullString
	err := sc.Scan(&inc.Name, &inc.Service, &inc.Ref, &inc.Commit, listCol{&inc.Covens}, mapCol{m: &inc.Input},
		mapCol{m: &inc.Essence}, &inc.Status, mapCol{m: &inc.State, required: true}, &active, &inc.LockReason,
		timeCol{&inc.CreatedAt}, timeCol{&inc.UpdatedAt}, strMapCol{&inc.SealedState})
	inc.ActiveRun = active.String
	inc.Members = []string{}
	return inc, err
}

// CreateIncarnation inserts the incarnation (applying, empty state), its
// members and its first run, with ActiveRun pointing at the run.
func (s *Store) CreateIncarnation(ctx context.Context, inc store.Incarnation, run store.Run) error {
	op := "creating incarnation " + inc.Name
	input, err := optMap(inc.Input)
	if err != nil {
		return s.wrap(op, err)
	}
	essence, err := optMap(inc.Essence)
	if err != nil {
		return s.wrap(op, err)
	}
	if inc.Name == "" {
		return s.wrap(op, invalid("incarnation name is empty"))
	}
	run.Incarnation = inc.Name
	created := s.orNow(inc.CreatedAt)
	return s.inTx(ctx, op, func(tx q) error {
		if err := mustExist(ctx, tx, "service", "services", "name", inc.Service); err != nil {
			return err
		}
		var n int
		if err := tx.row(ctx, `SELECT COUNT(*) FROM incarnations WHERE name = ?`, inc.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return conflict(nil, "incarnation %q already exists", inc.Name)
		}
		if _, err := tx.exec(ctx, `INSERT INTO incarnations (`+incarnationCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, '', ?, ?, '{}')`,
			inc.Name, inc.Service, inc.Ref, inc.Commit, strList(sortedSet(inc.Covens)), input, essence,
			store.IncarnationApplying, run.ID, s.ts(created), s.ts(created)); err != nil {
			return err
		}
		if err := s.insertMembers(ctx, tx, inc.Name, inc.Members); err != nil {
			return err
		}
		return s.insertRun(ctx, tx, run)
	})
}

// insertMembers adds sids to the membership relation, ignoring duplicates.
func (s *Store) insertMembers(ctx context.Context, tx q, name string, sids []string) error {
	now := s.ts(s.now())
	for _, sid := range sortedSet(sids) {
		if _, err := tx.exec(ctx, `INSERT INTO incarnation_members (incarnation, sid, added_at) VALUES (?, ?, ?)
			ON CONFLICT (incarnation, sid) DO NOTHING`, name, sid, now); err != nil {
			return err
		}
	}
	return nil
}

// GetIncarnation returns the incarnation with its members.
func (s *Store) GetIncarnation(ctx context.Context, name string) (store.Incarnation, error) {
	r := s.reader()
	inc, err := scanIncarnation(r.row(ctx, `SELECT `+incarnationCols+` FROM incarnations WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return inc, notFound("incarnation", name)
	}
	if err != nil {
		return inc, s.wrap("reading incarnation", err)
	}
	members, err := s.members(ctx, r, name)
	if err != nil {
		return inc, s.wrap("reading incarnation", err)
	}
	inc.Members = members[name]
	if inc.Members == nil {
		inc.Members = []string{}
	}
	return inc, nil
}

// members returns the sorted members of incarnation name, or of every
// incarnation when name is "".
func (s *Store) members(ctx context.Context, c q, name string) (map[string][]string, error) {
	query := `SELECT incarnation, sid FROM incarnation_members`
	var args []any
	if name != "" {
		query += ` WHERE incarnation = ?`
		args = append(args, name)
	}
	rows, err := c.query(ctx, query+` ORDER BY incarnation, sid`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var inc, sid string
		if err := rows.Scan(&inc, &sid); err != nil {
			return nil, err
		}
		out[inc] = append(out[inc], sid)
	}
	return out, rows.Err()
}

// ListIncarnations returns every incarnation with its members, sorted by
// name.
func (s *Store) ListIncarnations(ctx context.Context) ([]store.Incarnation, error) {
	r := s.reader()
	rows, err := r.query(ctx, `SELECT `+incarnationCols+` FROM incarnations ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing incarnations", err)
	}
	out, err := collect(rows, scanIncarnation)
	if err != nil {
		return nil, s.wrap("listing incarnations", err)
	}
	members, err := s.members(ctx, r, "")
	if err != nil {
		return nil, s.wrap("listing incarnations", err)
	}
	for i := range out {
		if m := members[out[i].Name]; m != nil {
			out[i].Members = m
		}
	}
	return out, nil
}

// incarnationSlot reads what decides whether an incarnation accepts a run:
// its status, active run and lock reason. ErrNotFound when it is missing.
func incarnationSlot(ctx context.Context, c q, name string) (status, active, reason string, err error) {
	var a sql.NullString
	err = c.row(ctx, `SELECT status, active_run, lock_reason FROM incarnations WHERE name = ?`, name).
		Scan(&status, &a, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", "", notFound("incarnation", name)
	}
	return status, a.String, reason, err
}

// busy is the conflict for an incarnation whose run slot is taken; Details
// is the active apply_id.
func busy(name, active string) error {
	return conflict(active, "incarnation %q has an active run %s", name, active)
}

// DeleteIncarnation deletes an incarnation without an active run, with
// everything that belongs to it.
func (s *Store) DeleteIncarnation(ctx context.Context, name string) error {
	return s.inTx(ctx, "deleting incarnation "+name, func(tx q) error {
		n, err := tx.affected(ctx, `DELETE FROM incarnations WHERE name = ? AND active_run IS NULL`, name)
		if err != nil || n > 0 {
			return err
		}
		_, active, _, err := incarnationSlot(ctx, tx, name)
		if err != nil {
			return err
		}
		return busy(name, active)
	})
}

// AddMembers adds sids to the incarnation's membership relation.
func (s *Store) AddMembers(ctx context.Context, name string, sids []string) error {
	return s.inTx(ctx, "adding members to "+name, func(tx q) error {
		if err := s.touchIncarnation(ctx, tx, name); err != nil {
			return err
		}
		return s.insertMembers(ctx, tx, name, sids)
	})
}

// RemoveMembers removes sids from the incarnation's membership relation.
func (s *Store) RemoveMembers(ctx context.Context, name string, sids []string) error {
	return s.inTx(ctx, "removing members from "+name, func(tx q) error {
		if err := s.touchIncarnation(ctx, tx, name); err != nil {
			return err
		}
		for _, sid := range sortedSet(sids) {
			if _, err := tx.exec(ctx, `DELETE FROM incarnation_members WHERE incarnation = ? AND sid = ?`, name, sid); err != nil {
				return err
			}
		}
		return nil
	})
}

// touchIncarnation bumps UpdatedAt; ErrNotFound when it does not exist.
func (s *Store) touchIncarnation(ctx context.Context, tx q, name string) error {
	n, err := tx.affected(ctx, `UPDATE incarnations SET updated_at = ? WHERE name = ?`, s.ts(s.now()), name)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("incarnation", name)
	}
	return nil
}

// SetIncarnationCommit pins the incarnation to ref/commit while no run is
// active.
func (s *Store) SetIncarnationCommit(ctx context.Context, name, ref, commit string) error {
	return s.inTx(ctx, "upgrading incarnation "+name, func(tx q) error {
		n, err := tx.affected(ctx, `UPDATE incarnations SET ref = ?, commit_id = ?, updated_at = ?
			WHERE name = ? AND active_run IS NULL`, ref, commit, s.ts(s.now()), name)
		if err != nil || n > 0 {
			return err
		}
		_, active, _, err := incarnationSlot(ctx, tx, name)
		if err != nil {
			return err
		}
		return busy(name, active)
	})
}

// Unlock moves an error_locked incarnation to ready.
func (s *Store) Unlock(ctx context.Context, name string) error {
	return s.inTx(ctx, "unlocking incarnation "+name, func(tx q) error {
		n, err := tx.affected(ctx, `UPDATE incarnations SET status = ?, lock_reason = '', updated_at = ?
			WHERE name = ? AND status = ?`, store.IncarnationReady, s.ts(s.now()), name, store.IncarnationErrorLocked)
		if err != nil || n > 0 {
			return err
		}
		status, _, _, err := incarnationSlot(ctx, tx, name)
		if err != nil {
			return err
		}
		return conflict(status, "incarnation %q is %s, not %s", name, status, store.IncarnationErrorLocked)
	})
}
