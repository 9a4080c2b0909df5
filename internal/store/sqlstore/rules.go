package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// PutKeeperRule inserts or replaces a Keeper-wide rule.
func (s *Store) PutKeeperRule(ctx context.Context, r store.KeeperRule) error {
	now := s.now()
	_, err := s.write(ctx, `INSERT INTO keeper_rules (name, source, owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET source = excluded.source, owner = excluded.owner, updated_at = excluded.updated_at`,
		r.Name, r.Source, r.Owner, s.ts(s.orNow(r.CreatedAt)), s.ts(now))
	return s.wrap("storing rule "+r.Name, err)
}

func scanKeeperRule(sc interface{ Scan(...any) error }) (store.KeeperRule, error) {
	var r store.KeeperRule
	err := sc.Scan(&r.Name, &r.Source, &r.Owner, timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt})
	return r, err
}

// GetKeeperRule returns the Keeper-wide rule called name.
func (s *Store) GetKeeperRule(ctx context.Context, name string) (store.KeeperRule, error) {
	r, err := scanKeeperRule(s.reader().row(ctx, `SELECT name, source, owner, created_at, updated_at FROM keeper_rules WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return r, notFound("rule", name)
	}
	return r, s.wrap("reading rule", err)
}

// ListKeeperRules lists the Keeper-wide rules by name.
func (s *Store) ListKeeperRules(ctx context.Context) ([]store.KeeperRule, error) {
	rows, err := s.reader().query(ctx, `SELECT name, source, owner, created_at, updated_at FROM keeper_rules ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing rules", err)
	}
	out, err := collect(rows, scanKeeperRule)
	return out, s.wrap("listing rules", err)
}

// DeleteKeeperRule deletes a Keeper-wide rule; its firings stay.
func (s *Store) DeleteKeeperRule(ctx context.Context, name string) error {
	n, err := s.write(ctx, `DELETE FROM keeper_rules WHERE name = ?`, name)
	if err == nil && n == 0 {
		return notFound("rule", name)
	}
	return s.wrap("deleting rule "+name, err)
}

// PutRulePause pauses a rule (insert or replace).
func (s *Store) PutRulePause(ctx context.Context, p store.RulePause) error {
	_, err := s.write(ctx, `INSERT INTO rule_pauses (rule, by_id, reason, at) VALUES (?, ?, ?, ?)
		ON CONFLICT (rule) DO UPDATE SET by_id = excluded.by_id, reason = excluded.reason, at = excluded.at`,
		p.Rule, p.By, p.Reason, s.ts(s.orNow(p.At)))
	return s.wrap("pausing rule "+p.Rule, err)
}

// DeleteRulePause resumes a rule.
func (s *Store) DeleteRulePause(ctx context.Context, rule string) error {
	_, err := s.write(ctx, `DELETE FROM rule_pauses WHERE rule = ?`, rule)
	return s.wrap("resuming rule "+rule, err)
}

// ListRulePauses lists the paused rules by id.
func (s *Store) ListRulePauses(ctx context.Context) ([]store.RulePause, error) {
	rows, err := s.reader().query(ctx, `SELECT rule, by_id, reason, at FROM rule_pauses ORDER BY rule`)
	if err != nil {
		return nil, s.wrap("listing paused rules", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.RulePause, error) {
		var p store.RulePause
		err := sc.Scan(&p.Rule, &p.By, &p.Reason, timeCol{&p.At})
		return p, err
	})
	return out, s.wrap("listing paused rules", err)
}

const firingCols = `id, rule, incarnation, event_kind, event, incident, decision, reason, action, run_id, task_ids, error, owner, at`

// AddFirings records decisions in one transaction.
func (s *Store) AddFirings(ctx context.Context, fs []store.Firing) ([]int64, error) {
	ids := make([]int64, 0, len(fs))
	if len(fs) == 0 {
		return ids, nil
	}
	err := s.inTx(ctx, "recording rule firings", func(tx q) error {
		for _, f := range fs {
			ev, err := reqMap(f.Event)
			if err != nil {
				return err
			}
			var id int64
			if err := tx.row(ctx, `INSERT INTO rule_firings (rule, incarnation, event_kind, event, incident, decision, reason, action, run_id, task_ids, error, owner, at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
				f.Rule, f.Incarnation, f.EventKind, ev, f.IncidentKey, f.Decision, f.Reason, f.Action, f.RunID,
				strList(f.TaskIDs), f.Error, f.Owner, s.ts(s.orNow(f.At))).Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// SetFiringOutcome records the run or tasks a firing started, or why it
// could not (the decision becomes failed).
func (s *Store) SetFiringOutcome(ctx context.Context, id int64, runID string, taskIDs []string, errMsg string) error {
	set, args := `run_id = ?, task_ids = ?, error = ?`, []any{runID, strList(taskIDs), errMsg}
	if errMsg != "" {
		set += `, decision = ?`
		args = append(args, store.FiringFailed)
	}
	n, err := s.write(ctx, `UPDATE rule_firings SET `+set+` WHERE id = ?`, append(args, id)...)
	if err == nil && n == 0 {
		return notFound("firing", strconv.FormatInt(id, 10))
	}
	return s.wrap("recording a firing's outcome", err)
}

func scanFiring(sc interface{ Scan(...any) error }) (store.Firing, error) {
	var f store.Firing
	var tasks string
	err := sc.Scan(&f.ID, &f.Rule, &f.Incarnation, &f.EventKind, mapCol{m: &f.Event, required: true}, &f.IncidentKey,
		&f.Decision, &f.Reason, &f.Action, &f.RunID, &tasks, &f.Error, &f.Owner, timeCol{&f.At})
	if err == nil && tasks != "" && tasks != "[]" {
		err = json.Unmarshal([]byte(tasks), &f.TaskIDs)
	}
	return f, err
}

// ListFirings lists decisions, newest first.
func (s *Store) ListFirings(ctx context.Context, f store.FiringFilter) ([]store.Firing, error) {
	query, args := `SELECT `+firingCols+` FROM rule_firings WHERE 1 = 1`, []any{}
	if f.Rule != "" {
		query += ` AND rule = ?`
		args = append(args, f.Rule)
	}
	if f.Incarnation != "" {
		query += ` AND incarnation = ?`
		args = append(args, f.Incarnation)
	}
	if f.Decision != "" {
		query += ` AND decision = ?`
		args = append(args, f.Decision)
	}
	if f.Before > 0 {
		query += ` AND id < ?`
		args = append(args, f.Before)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit), args...)
	if err != nil {
		return nil, s.wrap("listing rule firings", err)
	}
	out, err := collect(rows, scanFiring)
	return out, s.wrap("listing rule firings", err)
}

// RunRule returns the rule whose firing started run.
func (s *Store) RunRule(ctx context.Context, runID string) (string, error) {
	var rule string
	err := s.reader().row(ctx, `SELECT rule FROM rule_firings WHERE run_id = ? ORDER BY id LIMIT 1`, runID).Scan(&rule)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return rule, s.wrap("reading the rule of a run", err)
}

// PutEndpoint inserts or replaces a notification endpoint.
func (s *Store) PutEndpoint(ctx context.Context, e store.NotifyEndpoint) error {
	cfg, err := reqMap(e.Config)
	if err != nil {
		return s.wrap("storing endpoint "+e.Name, err)
	}
	var sealed any
	if len(e.Sealed) > 0 {
		sealed = e.Sealed
	}
	_, err = s.write(ctx, `INSERT INTO notify_endpoints (name, kind, url, config, sealed, owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, url = excluded.url, config = excluded.config, sealed = excluded.sealed,
		owner = excluded.owner, updated_at = excluded.updated_at`,
		e.Name, e.Kind, e.URL, cfg, sealed, e.Owner, s.ts(s.orNow(e.CreatedAt)), s.ts(s.now()))
	return s.wrap("storing endpoint "+e.Name, err)
}

const endpointCols = `name, kind, url, config, sealed, owner, created_at, updated_at`

func scanEndpoint(sc interface{ Scan(...any) error }) (store.NotifyEndpoint, error) {
	var e store.NotifyEndpoint
	err := sc.Scan(&e.Name, &e.Kind, &e.URL, mapCol{m: &e.Config}, &e.Sealed, &e.Owner, timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt})
	e.HasSecret = len(e.Sealed) > 0
	return e, err
}

// GetEndpoint returns the endpoint called name.
func (s *Store) GetEndpoint(ctx context.Context, name string) (store.NotifyEndpoint, error) {
	e, err := scanEndpoint(s.reader().row(ctx, `SELECT `+endpointCols+` FROM notify_endpoints WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return e, notFound("notification endpoint", name)
	}
	return e, s.wrap("reading endpoint", err)
}

// ListEndpoints lists the endpoints by name.
func (s *Store) ListEndpoints(ctx context.Context) ([]store.NotifyEndpoint, error) {
	rows, err := s.reader().query(ctx, `SELECT `+endpointCols+` FROM notify_endpoints ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing endpoints", err)
	}
	out, err := collect(rows, scanEndpoint)
	return out, s.wrap("listing endpoints", err)
}

// DeleteEndpoint deletes an endpoint; its deliveries stay.
func (s *Store) DeleteEndpoint(ctx context.Context, name string) error {
	n, err := s.write(ctx, `DELETE FROM notify_endpoints WHERE name = ?`, name)
	if err == nil && n == 0 {
		return notFound("notification endpoint", name)
	}
	return s.wrap("deleting endpoint "+name, err)
}

const deliveryCols = `id, endpoint, firing_id, payload, status, attempts, last_error, next_at, created_at, updated_at`

// AddDelivery queues a notification.
func (s *Store) AddDelivery(ctx context.Context, d store.Delivery) (int64, error) {
	if d.Status == "" {
		d.Status = store.DeliveryPending
	}
	now := s.now()
	var id int64
	err := q{s: s, db: s.w}.row(ctx, `INSERT INTO notify_deliveries (endpoint, firing_id, payload, status, attempts, last_error, next_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		d.Endpoint, d.FiringID, string(d.Payload), d.Status, d.Attempts, d.LastError, s.ts(s.orNow(d.NextAt)), s.ts(now), s.ts(now)).Scan(&id)
	return id, s.wrap("queueing a notification", err)
}

// UpdateDelivery records an attempt.
func (s *Store) UpdateDelivery(ctx context.Context, d store.Delivery) error {
	n, err := s.write(ctx, `UPDATE notify_deliveries SET status = ?, attempts = ?, last_error = ?, next_at = ?, updated_at = ? WHERE id = ?`,
		d.Status, d.Attempts, d.LastError, s.ts(s.orNow(d.NextAt)), s.ts(s.now()), d.ID)
	if err == nil && n == 0 {
		return notFound("delivery", strconv.FormatInt(d.ID, 10))
	}
	return s.wrap("recording a delivery", err)
}

func scanDelivery(sc interface{ Scan(...any) error }) (store.Delivery, error) {
	var d store.Delivery
	var payload string
	err := sc.Scan(&d.ID, &d.Endpoint, &d.FiringID, &payload, &d.Status, &d.Attempts, &d.LastError,
		timeCol{&d.NextAt}, timeCol{&d.CreatedAt}, timeCol{&d.UpdatedAt})
	d.Payload = []byte(payload)
	return d, err
}

// DueDeliveries lists pending deliveries due at now, oldest first.
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]store.Delivery, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.reader().query(ctx, `SELECT `+deliveryCols+` FROM notify_deliveries WHERE status = ? AND next_at <= ? ORDER BY next_at, id LIMIT `+strconv.Itoa(limit),
		store.DeliveryPending, s.ts(now))
	if err != nil {
		return nil, s.wrap("listing due notifications", err)
	}
	out, err := collect(rows, scanDelivery)
	return out, s.wrap("listing due notifications", err)
}

// GetDelivery returns one delivery.
func (s *Store) GetDelivery(ctx context.Context, id int64) (store.Delivery, error) {
	d, err := scanDelivery(s.reader().row(ctx, `SELECT `+deliveryCols+` FROM notify_deliveries WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, notFound("delivery", strconv.FormatInt(id, 10))
	}
	return d, s.wrap("reading a delivery", err)
}

// ListDeliveries lists deliveries of a status ("" = all), newest first.
func (s *Store) ListDeliveries(ctx context.Context, status string, limit int) ([]store.Delivery, error) {
	if limit <= 0 {
		limit = 100
	}
	query, args := `SELECT `+deliveryCols+` FROM notify_deliveries`, []any{}
	if status != "" {
		query += ` WHERE status = ?`
		args = append(args, status)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit), args...)
	if err != nil {
		return nil, s.wrap("listing notifications", err)
	}
	out, err := collect(rows, scanDelivery)
	return out, s.wrap("listing notifications", err)
}
