package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// incarnationExists fails with ErrNotFound when incarnation name does not
// exist.
func incarnationExists(ctx context.Context, tx q, name string) error {
	var one int
	err := tx.row(ctx, `SELECT 1 FROM incarnations WHERE name = ?`, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("incarnation", name)
	}
	return err
}

// SetDriftSchedule sets or clears the incarnation's drift schedule.
func (s *Store) SetDriftSchedule(ctx context.Context, incarnation string, sched *store.DriftSchedule) error {
	scenario, every := "", int64(0)
	if sched != nil {
		if sched.Every <= 0 {
			return s.wrap("setting the drift schedule of "+incarnation, invalid("drift every must be positive, not %s", sched.Every))
		}
		scenario, every = sched.Scenario, sched.Every.Milliseconds()
	}
	return s.inTx(ctx, "setting the drift schedule of "+incarnation, func(tx q) error {
		if err := incarnationExists(ctx, tx, incarnation); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO drift (incarnation, scenario, every_ms, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (incarnation) DO UPDATE SET scenario = excluded.scenario, every_ms = excluded.every_ms,
			updated_at = excluded.updated_at`, incarnation, scenario, every, s.ts(s.now()))
		return err
	})
}

// PutDriftReport replaces the incarnation's last drift report.
func (s *Store) PutDriftReport(ctx context.Context, incarnation string, rep store.DriftReport) error {
	rep.CheckedAt = normTime(s.orNow(rep.CheckedAt))
	b, err := json.Marshal(rep)
	if err != nil {
		return s.wrap("recording the drift report of "+incarnation, invalid("encoding the drift report: %v", err))
	}
	return s.inTx(ctx, "recording the drift report of "+incarnation, func(tx q) error {
		if err := incarnationExists(ctx, tx, incarnation); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO drift (incarnation, report, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (incarnation) DO UPDATE SET report = excluded.report, updated_at = excluded.updated_at`,
			incarnation, string(b), s.ts(s.now()))
		return err
	})
}

const driftCols = `incarnation, scenario, every_ms, report`

func scanDrift(sc interface{ Scan(...any) error }) (store.Drift, error) {
	var d store.Drift
	var scenario string
	var every int64
	var report sql.NullString
	if err := sc.Scan(&d.Incarnation, &scenario, &every, &report); err != nil {
		return d, err
	}
	if every > 0 {
		d.Schedule = &store.DriftSchedule{Scenario: scenario, Every: time.Duration(every) * time.Millisecond}
	}
	if report.Valid && report.String != "" {
		var rep store.DriftReport
		if err := json.Unmarshal([]byte(report.String), &rep); err != nil {
			return d, errors.New("decoding the stored drift report: " + err.Error())
		}
		rep.CheckedAt = rep.CheckedAt.UTC()
		d.Report = &rep
	}
	return d, nil
}

// GetDrift returns the incarnation's drift schedule and last report.
func (s *Store) GetDrift(ctx context.Context, incarnation string) (store.Drift, error) {
	d, err := scanDrift(s.reader().row(ctx, `SELECT `+driftCols+` FROM drift WHERE incarnation = ?`, incarnation))
	if errors.Is(err, sql.ErrNoRows) {
		if err := incarnationExists(ctx, s.reader(), incarnation); err != nil {
			return store.Drift{}, s.wrap("reading drift", err)
		}
		return store.Drift{Incarnation: incarnation}, nil
	}
	return d, s.wrap("reading drift", err)
}

// ListDrift lists the incarnations with a drift schedule or report.
func (s *Store) ListDrift(ctx context.Context) ([]store.Drift, error) {
	rows, err := s.reader().query(ctx, `SELECT `+driftCols+` FROM drift
		WHERE every_ms > 0 OR report IS NOT NULL ORDER BY incarnation`)
	if err != nil {
		return nil, s.wrap("listing drift", err)
	}
	out, err := collect(rows, scanDrift)
	return out, s.wrap("listing drift", err)
}
