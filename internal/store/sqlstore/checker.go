package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Checker task statuses the store acts on.
const (
	taskPending = "PENDING"
	taskRunning = "RUNNING"
	taskFailure = "FAILURE"
)

// PutProcedure inserts or replaces a procedure's source.
func (s *Store) PutProcedure(ctx context.Context, p store.Procedure) error {
	created := s.orNow(p.CreatedAt)
	updated := p.UpdatedAt
	if updated.IsZero() {
		updated = s.now()
	}
	_, err := s.write(ctx, `INSERT INTO procedures (name, source, created_at, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET source = excluded.source, updated_at = excluded.updated_at`,
		p.Name, p.Source, s.ts(created), s.ts(updated))
	return s.wrap("storing procedure "+p.Name, err)
}

func scanProcedure(sc interface{ Scan(...any) error }) (store.Procedure, error) {
	var p store.Procedure
	err := sc.Scan(&p.Name, &p.Source, timeCol{&p.CreatedAt}, timeCol{&p.UpdatedAt})
	return p, err
}

// GetProcedure returns the procedure called name.
func (s *Store) GetProcedure(ctx context.Context, name string) (store.Procedure, error) {
	p, err := scanProcedure(s.reader().row(ctx, `SELECT name, source, created_at, updated_at FROM procedures WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound("procedure", name)
	}
	return p, s.wrap("reading procedure", err)
}

// ListProcedures returns every procedure, sorted by name.
func (s *Store) ListProcedures(ctx context.Context) ([]store.Procedure, error) {
	rows, err := s.reader().query(ctx, `SELECT name, source, created_at, updated_at FROM procedures ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing procedures", err)
	}
	out, err := collect(rows, scanProcedure)
	return out, s.wrap("listing procedures", err)
}

// DeleteProcedure deletes a procedure no schedule uses; conflict (Details:
// the schedule ids) otherwise. Its past tasks are kept.
func (s *Store) DeleteProcedure(ctx context.Context, name string) error {
	return s.inTx(ctx, "deleting procedure "+name, func(tx q) error {
		rows, err := tx.query(ctx, `SELECT id FROM schedules WHERE procedure_name = ? ORDER BY id`, name)
		if err != nil {
			return err
		}
		ids, err := collect(rows, func(sc interface{ Scan(...any) error }) (string, error) {
			var id string
			return id, sc.Scan(&id)
		})
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return conflict(ids, "procedure %q is used by schedules %v", name, ids)
		}
		n, err := tx.affected(ctx, `DELETE FROM procedures WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("procedure", name)
		}
		return nil
	})
}

const taskCols = `id, procedure_name, vars, status, run_error, message, parent_id, schedule_id, keeper_id,
	created_at, started_at, finished_at`

func scanTask(sc interface{ Scan(...any) error }) (store.CheckerTask, error) {
	var t store.CheckerTask
	err := sc.Scan(&t.ID, &t.Procedure, mapCol{m: &t.Vars}, &t.Status, &t.RunError, &t.Message, &t.ParentID,
		&t.ScheduleID, &t.KeeperID, timeCol{&t.CreatedAt}, nullTimeCol{&t.StartedAt}, nullTimeCol{&t.FinishedAt})
	return t, err
}

// CreateCheckerTask inserts a task and its initial Log lines, if any.
func (s *Store) CreateCheckerTask(ctx context.Context, t store.CheckerTask) error {
	op := "creating checker task " + t.ID
	vars, err := optMap(t.Vars)
	if err != nil {
		return s.wrap(op, err)
	}
	if t.Status == "" {
		t.Status = taskPending
	}
	return s.inTx(ctx, op, func(tx q) error {
		if _, err := tx.exec(ctx, `INSERT INTO checker_tasks (`+taskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Procedure, vars, t.Status, t.RunError, t.Message, t.ParentID, t.ScheduleID, t.KeeperID,
			s.ts(s.orNow(t.CreatedAt)), s.tsPtr(t.StartedAt), s.tsPtr(t.FinishedAt)); err != nil {
			return err
		}
		return s.insertLog(ctx, tx, t.ID, t.Log)
	})
}

// GetCheckerTask returns a task with its step log.
func (s *Store) GetCheckerTask(ctx context.Context, id string) (store.CheckerTask, error) {
	r := s.reader()
	t, err := scanTask(r.row(ctx, `SELECT `+taskCols+` FROM checker_tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, notFound("checker task", id)
	}
	if err != nil {
		return t, s.wrap("reading checker task", err)
	}
	rows, err := r.query(ctx, `SELECT at, step, kind, message, data FROM checker_task_log WHERE task_id = ? ORDER BY id`, id)
	if err != nil {
		return t, s.wrap("reading checker task log", err)
	}
	t.Log, err = collect(rows, func(sc interface{ Scan(...any) error }) (store.CheckerLogLine, error) {
		var l store.CheckerLogLine
		err := sc.Scan(timeCol{&l.Time}, &l.Step, &l.Kind, &l.Message, mapCol{m: &l.Data})
		return l, err
	})
	return t, s.wrap("reading checker task log", err)
}

// ListCheckerTasks returns the tasks of procedure ("" = all), newest first,
// without their logs.
func (s *Store) ListCheckerTasks(ctx context.Context, procedure string, limit int) ([]store.CheckerTask, error) {
	query := `SELECT ` + taskCols + ` FROM checker_tasks`
	var args []any
	if procedure != "" {
		query += ` WHERE procedure_name = ?`
		args = append(args, procedure)
	}
	lim, args := limitClause(limit, args)
	rows, err := s.reader().query(ctx, query+` ORDER BY created_at DESC, id DESC`+lim, args...)
	if err != nil {
		return nil, s.wrap("listing checker tasks", err)
	}
	out, err := collect(rows, scanTask)
	return out, s.wrap("listing checker tasks", err)
}

// UpdateCheckerTask replaces a task's status, errors and timestamps.
func (s *Store) UpdateCheckerTask(ctx context.Context, t store.CheckerTask) error {
	n, err := s.write(ctx, `UPDATE checker_tasks SET status = ?, run_error = ?, message = ?, started_at = ?, finished_at = ?
		WHERE id = ?`, t.Status, t.RunError, t.Message, s.tsPtr(t.StartedAt), s.tsPtr(t.FinishedAt), t.ID)
	if err != nil {
		return s.wrap("updating checker task "+t.ID, err)
	}
	if n == 0 {
		return notFound("checker task", t.ID)
	}
	return nil
}

// AppendCheckerLog appends step-log lines to a task.
func (s *Store) AppendCheckerLog(ctx context.Context, taskID string, lines []store.CheckerLogLine) error {
	if len(lines) == 0 {
		return nil
	}
	return s.inTx(ctx, "appending checker log", func(tx q) error {
		if err := mustExist(ctx, tx, "checker task", "checker_tasks", "id", taskID); err != nil {
			return err
		}
		return s.insertLog(ctx, tx, taskID, lines)
	})
}

func (s *Store) insertLog(ctx context.Context, tx q, taskID string, lines []store.CheckerLogLine) error {
	for _, l := range lines {
		data, err := optMap(l.Data)
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO checker_task_log (task_id, at, step, kind, message, data)
			VALUES (?, ?, ?, ?, ?, ?)`, taskID, s.ts(s.orNow(l.Time)), l.Step, l.Kind, l.Message, data); err != nil {
			return err
		}
	}
	return nil
}

// FailRunningCheckerTasks fails the PENDING/RUNNING tasks of keeperID
// ("" = all) and returns how many it failed.
func (s *Store) FailRunningCheckerTasks(ctx context.Context, keeperID, runError string, at time.Time) (int, error) {
	query := `UPDATE checker_tasks SET status = ?, run_error = ?, finished_at = ? WHERE status IN (?, ?)`
	args := []any{taskFailure, runError, s.ts(at), taskPending, taskRunning}
	if keeperID != "" {
		query += ` AND keeper_id = ?`
		args = append(args, keeperID)
	}
	n, err := s.write(ctx, query, args...)
	return int(n), s.wrap("failing unfinished checker tasks", err)
}

// CreateSchedule stores a schedule of an existing procedure.
func (s *Store) CreateSchedule(ctx context.Context, sc store.Schedule) error {
	vars, err := optMap(sc.Vars)
	if err != nil {
		return s.wrap("creating schedule", err)
	}
	return s.inTx(ctx, "creating schedule "+sc.ID, func(tx q) error {
		if err := mustExist(ctx, tx, "procedure", "procedures", "name", sc.Procedure); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO schedules (id, procedure_name, vars, cron, created_at, owner_id) VALUES (?, ?, ?, ?, ?, ?)`,
			sc.ID, sc.Procedure, vars, sc.Cron, s.ts(s.orNow(sc.CreatedAt)), sc.OwnerID)
		return err
	})
}

// ListSchedules returns every schedule, oldest first, with its owner read
// in the same query: a schedule whose owner is disabled, deleted or
// unknown is marked paused.
func (s *Store) ListSchedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.reader().query(ctx, `SELECT s.id, s.procedure_name, s.vars, s.cron, s.created_at, s.owner_id,
			COALESCE(a.id, ''), COALESCE(a.name, ''), a.disabled_at
		FROM schedules s LEFT JOIN archons a ON a.id = s.owner_id ORDER BY s.created_at, s.id`)
	if err != nil {
		return nil, s.wrap("listing schedules", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.Schedule, error) {
		var c store.Schedule
		var ownerFound string
		var disabled *time.Time
		err := sc.Scan(&c.ID, &c.Procedure, mapCol{m: &c.Vars}, &c.Cron, timeCol{&c.CreatedAt}, &c.OwnerID,
			&ownerFound, &c.Owner, nullTimeCol{&disabled})
		switch {
		case c.OwnerID == "":
			c.Paused, c.PauseReason = true, "no owner recorded (made before schedules had owners): delete it and add it again"
		case ownerFound == "":
			c.Paused, c.PauseReason = true, "its owner, archon "+c.OwnerID+", was deleted"
		case disabled != nil:
			c.Paused, c.PauseReason = true, "its owner, archon "+c.Owner+", is disabled"
		}
		return c, err
	})
	return out, s.wrap("listing schedules", err)
}

// DeleteSchedule deletes a schedule and its tick claims.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	n, err := s.write(ctx, `DELETE FROM schedules WHERE id = ?`, id)
	if err != nil {
		return s.wrap("deleting schedule "+id, err)
	}
	if n == 0 {
		return notFound("schedule", id)
	}
	return nil
}

// tickRetention is how long tick claims are kept: far longer than any
// clock skew between keepers, so a pruned tick is never claimed again.
const tickRetention = 24 * time.Hour

// ClaimTick claims schedule id's tick; false when it was claimed before.
func (s *Store) ClaimTick(ctx context.Context, scheduleID string, tick time.Time) (bool, error) {
	var claimed bool
	err := s.inTx(ctx, "claiming schedule tick", func(tx q) error {
		if err := mustExist(ctx, tx, "schedule", "schedules", "id", scheduleID); err != nil {
			return err
		}
		n, err := tx.affected(ctx, `INSERT INTO schedule_ticks (schedule_id, tick, claimed_at) VALUES (?, ?, ?)
			ON CONFLICT (schedule_id, tick) DO NOTHING`, scheduleID, s.ts(tick), s.ts(s.now()))
		if err != nil {
			return err
		}
		if claimed = n == 1; claimed {
			_, err = tx.exec(ctx, `DELETE FROM schedule_ticks WHERE schedule_id = ? AND tick < ?`,
				scheduleID, s.ts(tick.Add(-tickRetention)))
		}
		return err
	})
	return claimed, err
}

// TryLease takes or renews lease name for holder until now+ttl, unless
// another holder has it unexpired.
func (s *Store) TryLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (bool, error) {
	n, err := s.write(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= ?`,
		name, holder, s.ts(now.Add(ttl)), s.ts(now))
	if err != nil {
		return false, s.wrap("taking lease "+name, err)
	}
	return n == 1, nil
}

// ReleaseLease gives up lease name if holder has it.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	_, err := s.write(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder)
	return s.wrap("releasing lease "+name, err)
}
