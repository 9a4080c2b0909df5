package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// PutHealthStates upserts a batch of health states in one transaction.
func (s *Store) PutHealthStates(ctx context.Context, states []store.HealthState) error {
	if len(states) == 0 {
		return nil
	}
	return s.inTx(ctx, "recording health states", func(tx q) error {
		for _, st := range states {
			perf := ""
			if len(st.Perfdata) > 0 {
				b, err := json.Marshal(st.Perfdata)
				if err != nil {
					return invalid("encoding perfdata: %v", err)
				}
				perf = string(b)
			}
			_, err := tx.exec(ctx, `INSERT INTO health_states (incarnation, check_name, sid, status, message, perfdata, since, checked_at, reported_at, flaps)
				SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM incarnations WHERE name = ?)
				ON CONFLICT (incarnation, check_name, sid) DO UPDATE SET status = excluded.status, message = excluded.message,
				perfdata = excluded.perfdata, since = excluded.since, checked_at = excluded.checked_at,
				reported_at = excluded.reported_at, flaps = excluded.flaps`,
				st.Incarnation, st.Check, st.SID, st.Status, st.Message, perf, s.ts(st.Since), s.ts(st.CheckedAt),
				s.ts(s.orNow(st.ReportedAt)), st.Flaps, st.Incarnation)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ListHealthStates lists the states of one incarnation or of all.
func (s *Store) ListHealthStates(ctx context.Context, incarnation string) ([]store.HealthState, error) {
	query := `SELECT incarnation, check_name, sid, status, message, perfdata, since, checked_at, reported_at, flaps FROM health_states`
	var args []any
	if incarnation != "" {
		query += ` WHERE incarnation = ?`
		args = append(args, incarnation)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY incarnation, check_name, sid`, args...)
	if err != nil {
		return nil, s.wrap("listing health states", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.HealthState, error) {
		var st store.HealthState
		var perf string
		if err := sc.Scan(&st.Incarnation, &st.Check, &st.SID, &st.Status, &st.Message, &perf,
			timeCol{&st.Since}, timeCol{&st.CheckedAt}, timeCol{&st.ReportedAt}, &st.Flaps); err != nil {
			return st, err
		}
		if perf != "" {
			if err := json.Unmarshal([]byte(perf), &st.Perfdata); err != nil {
				return st, fmt.Errorf("decoding stored perfdata: %w", err)
			}
		}
		return st, nil
	})
	return out, s.wrap("listing health states", err)
}

// RetainHealthStates deletes the states of checks or hosts no longer part
// of the incarnation.
func (s *Store) RetainHealthStates(ctx context.Context, incarnation string, checks, sids []string) (int, error) {
	n := 0
	err := s.inTx(ctx, "pruning health states of "+incarnation, func(tx q) error {
		rows, err := tx.query(ctx, `SELECT check_name, sid FROM health_states WHERE incarnation = ?`, incarnation)
		if err != nil {
			return err
		}
		type key struct{ check, sid string }
		gone, err := collect(rows, func(sc interface{ Scan(...any) error }) (key, error) {
			var k key
			return k, sc.Scan(&k.check, &k.sid)
		})
		if err != nil {
			return err
		}
		for _, k := range gone {
			if slices.Contains(checks, k.check) && slices.Contains(sids, k.sid) {
				continue
			}
			if _, err := tx.exec(ctx, `DELETE FROM health_states WHERE incarnation = ? AND check_name = ? AND sid = ?`, incarnation, k.check, k.sid); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// AddHealthTransitions appends a batch of transitions in one transaction.
func (s *Store) AddHealthTransitions(ctx context.Context, ts []store.HealthTransition) error {
	if len(ts) == 0 {
		return nil
	}
	return s.inTx(ctx, "recording health transitions", func(tx q) error {
		for _, t := range ts {
			_, err := tx.exec(ctx, `INSERT INTO health_transitions (incarnation, check_name, sid, from_status, to_status, message, at)
				SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM incarnations WHERE name = ?)`,
				t.Incarnation, t.Check, t.SID, t.From, t.To, t.Message, s.ts(s.orNow(t.At)), t.Incarnation)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ListHealthTransitions lists transitions newest first.
func (s *Store) ListHealthTransitions(ctx context.Context, incarnation string, limit int) ([]store.HealthTransition, error) {
	if limit <= 0 {
		limit = 100
	}
	query := `SELECT id, incarnation, check_name, sid, from_status, to_status, message, at FROM health_transitions`
	var args []any
	if incarnation != "" {
		query += ` WHERE incarnation = ?`
		args = append(args, incarnation)
	}
	args = append(args, limit)
	rows, err := s.reader().query(ctx, query+` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, s.wrap("listing health transitions", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.HealthTransition, error) {
		var t store.HealthTransition
		err := sc.Scan(&t.ID, &t.Incarnation, &t.Check, &t.SID, &t.From, &t.To, &t.Message, timeCol{&t.At})
		return t, err
	})
	return out, s.wrap("listing health transitions", err)
}

// PruneHealthTransitions bounds the history by age and count per
// incarnation.
func (s *Store) PruneHealthTransitions(ctx context.Context, keep int, before time.Time) (int, error) {
	n := 0
	err := s.inTx(ctx, "pruning health transitions", func(tx q) error {
		res, err := tx.exec(ctx, `DELETE FROM health_transitions WHERE at < ?`, s.ts(before))
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		n += int(k)
		if keep <= 0 {
			return nil
		}
		rows, err := tx.query(ctx, `SELECT incarnation, COUNT(*) FROM health_transitions GROUP BY incarnation`)
		if err != nil {
			return err
		}
		type count struct {
			inc string
			n   int
		}
		counts, err := collect(rows, func(sc interface{ Scan(...any) error }) (count, error) {
			var c count
			return c, sc.Scan(&c.inc, &c.n)
		})
		if err != nil {
			return err
		}
		for _, c := range counts {
			if c.n <= keep {
				continue
			}
			res, err := tx.exec(ctx, `DELETE FROM health_transitions WHERE incarnation = ? AND id <= (
				SELECT id FROM health_transitions WHERE incarnation = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`, c.inc, c.inc, keep)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return nil
	})
	return n, err
}

// PutVitals upserts a batch of vital signs.
func (s *Store) PutVitals(ctx context.Context, vs []store.Vitals) error {
	if len(vs) == 0 {
		return nil
	}
	return s.inTx(ctx, "recording vital signs", func(tx q) error {
		for _, v := range vs {
			b, err := json.Marshal(v.Vitals)
			if err != nil {
				return invalid("encoding the vital signs of %s: %v", v.SID, err)
			}
			if _, err := tx.exec(ctx, `INSERT INTO soul_vitals (sid, vitals, at) VALUES (?, ?, ?)
				ON CONFLICT (sid) DO UPDATE SET vitals = excluded.vitals, at = excluded.at`, v.SID, string(b), s.ts(s.orNow(v.At))); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListVitals lists vital signs by SID.
func (s *Store) ListVitals(ctx context.Context, sids []string) ([]store.Vitals, error) {
	query := `SELECT sid, vitals, at FROM soul_vitals`
	var args []any
	if sids != nil {
		if len(sids) == 0 {
			return []store.Vitals{}, nil
		}
		query += ` WHERE sid IN (?` + strings.Repeat(", ?", len(sids)-1) + `)`
		for _, sid := range sids {
			args = append(args, sid)
		}
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY sid`, args...)
	if err != nil {
		return nil, s.wrap("listing vital signs", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.Vitals, error) {
		var v store.Vitals
		var raw string
		if err := sc.Scan(&v.SID, &raw, timeCol{&v.At}); err != nil {
			return v, err
		}
		return v, json.Unmarshal([]byte(raw), &v.Vitals)
	})
	return out, s.wrap("listing vital signs", err)
}

// PutRunHealth keeps the health after a run.
func (s *Store) PutRunHealth(ctx context.Context, runID string, health []byte, at time.Time) error {
	return s.inTx(ctx, "recording the health after run "+runID, func(tx q) error {
		_, err := tx.exec(ctx, `INSERT INTO run_health (run_id, health, at)
			SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE id = ?)
			ON CONFLICT (run_id) DO UPDATE SET health = excluded.health, at = excluded.at`, runID, string(health), s.ts(s.orNow(at)), runID)
		return err
	})
}

// GetRunHealth returns the health after a run, nil when none was kept.
func (s *Store) GetRunHealth(ctx context.Context, runID string) ([]byte, error) {
	var h string
	err := s.reader().row(ctx, `SELECT health FROM run_health WHERE run_id = ?`, runID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap("reading the health after run "+runID, err)
	}
	return []byte(h), nil
}
