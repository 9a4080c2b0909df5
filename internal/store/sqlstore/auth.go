package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// CreateArchon inserts an Archon; conflict when the id or name is taken.
// An Archon created with a role (admin, operator, viewer or a custom
// role) gets, in the same transaction, the grant of that role on the whole
// keeper: what the role meant before teams and scoped grants existed.
// Role "none" (or "") creates an Archon with no grant at all, for teams to
// give it its powers.
func (s *Store) CreateArchon(ctx context.Context, a store.Archon) error {
	created := s.orNow(a.CreatedAt)
	return s.inTx(ctx, "creating archon "+a.Name, func(tx q) error {
		if _, err := tx.exec(ctx, `INSERT INTO archons (id, name, role, created_at, disabled_at) VALUES (?, ?, ?, ?, ?)`,
			a.ID, a.Name, a.Role, s.ts(created), s.tsPtr(a.DisabledAt)); err != nil {
			return err
		}
		if a.Role == "" || a.Role == store.RoleNone {
			return nil
		}
		_, err := tx.exec(ctx, `INSERT INTO grants (`+grantCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			"archon-role-"+a.ID, store.SubjectArchon, a.ID, a.Role, store.ScopeKeeper, "", "", s.ts(created))
		return err
	})
}

// adminGuard is the settings row every DisableArchon writes first. The row
// lock PostgreSQL takes on it (SQLite has one writer anyway) orders
// concurrent disables, so that two admins disabling each other cannot both
// count the other as still enabled.
const adminGuard = "store.archons.admin_guard"

// DisableArchon marks the Archon disabled unless it is the last enabled
// admin.
func (s *Store) DisableArchon(ctx context.Context, id string, at time.Time) error {
	return s.inTx(ctx, "disabling archon "+id, func(tx q) error {
		if _, err := tx.exec(ctx, `INSERT INTO settings (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, adminGuard, []byte{}); err != nil {
			return err
		}
		a, err := scanArchon(tx.row(ctx, `SELECT `+archonCols+` FROM archons WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("archon", id)
		}
		if err != nil || a.DisabledAt != nil {
			return err
		}
		if _, err := tx.exec(ctx, `UPDATE archons SET disabled_at = ? WHERE id = ?`, s.ts(at), id); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE archon_id = ? AND revoked_at IS NULL`, s.ts(at), id); err != nil {
			return err
		}
		if a.Role != store.RoleAdmin {
			return nil
		}
		var admins int
		if err := tx.row(ctx, `SELECT COUNT(*) FROM archons WHERE role = ? AND disabled_at IS NULL`, store.RoleAdmin).Scan(&admins); err != nil {
			return err
		}
		if admins == 0 {
			return conflict(nil, "archon %s is the last enabled admin: enable or create another admin first", a.Name)
		}
		return nil
	})
}

// EnableArchon clears the Archon's disabled mark.
func (s *Store) EnableArchon(ctx context.Context, id string) error {
	n, err := s.write(ctx, `UPDATE archons SET disabled_at = NULL WHERE id = ?`, id)
	if err != nil {
		return s.wrap("enabling archon "+id, err)
	}
	if n == 0 {
		return notFound("archon", id)
	}
	return nil
}

const archonCols = `id, name, role, created_at, disabled_at`

func scanArchon(sc interface{ Scan(...any) error }) (store.Archon, error) {
	var a store.Archon
	err := sc.Scan(&a.ID, &a.Name, &a.Role, timeCol{&a.CreatedAt}, nullTimeCol{&a.DisabledAt})
	return a, err
}

// GetArchon returns the Archon with id.
func (s *Store) GetArchon(ctx context.Context, id string) (store.Archon, error) {
	a, err := scanArchon(s.reader().row(ctx, `SELECT `+archonCols+` FROM archons WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, notFound("archon", id)
	}
	return a, s.wrap("reading archon", err)
}

// ListArchons returns every Archon, sorted by name.
func (s *Store) ListArchons(ctx context.Context) ([]store.Archon, error) {
	rows, err := s.reader().query(ctx, `SELECT `+archonCols+` FROM archons ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing archons", err)
	}
	out, err := collect(rows, scanArchon)
	return out, s.wrap("listing archons", err)
}

// CountArchons returns how many Archons exist.
func (s *Store) CountArchons(ctx context.Context) (int, error) {
	var n int
	err := s.reader().row(ctx, `SELECT COUNT(*) FROM archons`).Scan(&n)
	return n, s.wrap("counting archons", err)
}

// CreateToken records an issued token; ErrNotFound for an unknown Archon.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	return s.inTx(ctx, "creating token", func(tx q) error {
		if err := mustExist(ctx, tx, "archon", "archons", "id", t.ArchonID); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO tokens (id, archon_id, description, expires_at, revoked_at, created_at, parent_id)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.ArchonID, t.Description, s.ts(t.ExpiresAt), s.tsPtr(t.RevokedAt), s.ts(s.orNow(t.CreatedAt)), t.ParentID)
		return err
	})
}

const tokenCols = `id, archon_id, description, expires_at, revoked_at, created_at, parent_id`

func scanToken(sc interface{ Scan(...any) error }, extra ...any) (store.Token, error) {
	var t store.Token
	err := sc.Scan(append([]any{&t.ID, &t.ArchonID, &t.Description, timeCol{&t.ExpiresAt}, nullTimeCol{&t.RevokedAt}, timeCol{&t.CreatedAt}, &t.ParentID}, extra...)...)
	return t, err
}

// GetToken returns the token record with id.
func (s *Store) GetToken(ctx context.Context, id string) (store.Token, error) {
	t, err := scanToken(s.reader().row(ctx, `SELECT `+tokenCols+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, notFound("token", id)
	}
	return t, s.wrap("reading token", err)
}

// GetTokenArchon returns the token record with id and its Archon in one
// query.
func (s *Store) GetTokenArchon(ctx context.Context, id string) (store.Token, store.Archon, error) {
	var a store.Archon
	t, err := scanToken(s.reader().row(ctx, `SELECT t.id, t.archon_id, t.description, t.expires_at, t.revoked_at, t.created_at, t.parent_id,
			a.id, a.name, a.role, a.created_at, a.disabled_at
		FROM tokens t JOIN archons a ON a.id = t.archon_id WHERE t.id = ?`, id),
		&a.ID, &a.Name, &a.Role, timeCol{&a.CreatedAt}, nullTimeCol{&a.DisabledAt})
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, store.Archon{}, notFound("token", id)
	}
	return t, a, s.wrap("reading token", err)
}

// ListTokens returns the token records of archonID ("" = all), oldest
// first.
func (s *Store) ListTokens(ctx context.Context, archonID string) ([]store.Token, error) {
	query := `SELECT ` + tokenCols + ` FROM tokens`
	var args []any
	if archonID != "" {
		query += ` WHERE archon_id = ?`
		args = append(args, archonID)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, s.wrap("listing tokens", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.Token, error) { return scanToken(sc) })
	return out, s.wrap("listing tokens", err)
}

// RevokeToken marks the token and every token minted from it (its
// descendants through parent_id) revoked at at; revoking twice keeps the
// first time.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	return s.inTx(ctx, "revoking token "+id, func(tx q) error {
		if err := mustExist(ctx, tx, "token", "tokens", "id", id); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `WITH RECURSIVE minted (id) AS (
				SELECT id FROM tokens WHERE id = ?
				UNION SELECT t.id FROM tokens t JOIN minted m ON t.parent_id = m.id)
			UPDATE tokens SET revoked_at = ? WHERE id IN (SELECT id FROM minted) AND revoked_at IS NULL`, id, s.ts(at))
		return err
	})
}

// AppendAudit appends an audit entry; e.ID is assigned by the store.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	summary, err := optMap(e.Summary)
	if err != nil {
		return s.wrap("appending audit entry", err)
	}
	_, err = s.write(ctx, `INSERT INTO audit (at, archon_id, action, target, summary) VALUES (?, ?, ?, ?, ?)`,
		s.ts(s.orNow(e.Time)), e.ArchonID, e.Action, e.Target, summary)
	return s.wrap("appending audit entry", err)
}

// ListAudit returns audit entries matching f, newest first.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	var where []string
	var args []any
	if f.ArchonID != "" {
		where = append(where, "archon_id = ?")
		args = append(args, f.ArchonID)
	}
	if f.Action != "" {
		where = append(where, "action = ?")
		args = append(args, f.Action)
	}
	query := `SELECT id, at, archon_id, action, target, summary FROM audit`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("listing audit", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.AuditEntry, error) {
		var e store.AuditEntry
		err := sc.Scan(&e.ID, timeCol{&e.Time}, &e.ArchonID, &e.Action, &e.Target, mapCol{m: &e.Summary})
		return e, err
	})
	return out, s.wrap("listing audit", err)
}

// GetSetting returns the value stored under key.
func (s *Store) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.reader().row(ctx, `SELECT value FROM settings WHERE name = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("setting", key)
	}
	if v == nil && err == nil {
		v = []byte{}
	}
	return v, s.wrap("reading setting "+key, err)
}

// PutSetting stores value under key, replacing any previous value.
func (s *Store) PutSetting(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	_, err := s.write(ctx, `INSERT INTO settings (name, value) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, key, value)
	return s.wrap("storing setting "+key, err)
}

// DeleteSetting removes the value stored under key; removing a missing
// key is a no-op. Where the dialect can, the value's bytes are scrubbed
// from the database files too (Dialect.ScrubbedDelete).
func (s *Store) DeleteSetting(ctx context.Context, key string) error {
	const del = `DELETE FROM settings WHERE name = ?`
	var err error
	if s.d.ScrubbedDelete != nil {
		_, err = s.d.ScrubbedDelete(ctx, s.w, "settings", s.rebind(del), key)
	} else {
		_, err = s.write(ctx, del, key)
	}
	return s.wrap("deleting setting "+key, err)
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// mustExist returns ErrNotFound unless table has a row whose col is key.
func mustExist(ctx context.Context, c q, kind, table, col, key string) error {
	var n int
	if err := c.row(ctx, `SELECT COUNT(*) FROM `+table+` WHERE `+col+` = ?`, key).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return notFound(kind, key)
	}
	return nil
}
