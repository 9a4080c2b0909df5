package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration is one versioned step of a dialect's schema.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the migrations in the root of fsys, named
// NNNN_description.sql, ordered by version. Versions must be unique.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	return ms, nil
}

// Migrate brings db's schema up to date: it applies, in order and each in
// its own transaction, every migration not yet recorded in
// schema_migrations. It holds the dialect's migration lock throughout, so
// several processes starting on one database apply each migration once. A
// database already migrated further than ms know is refused: an older binary
// must not run on a newer schema.
func Migrate(ctx context.Context, db *sql.DB, d Dialect, ms []Migration) (err error) {
	s := New(db, db, d)
	conn, err := db.Conn(ctx)
	if err != nil {
		return s.wrap("migrating schema", err)
	}
	defer conn.Close()
	if d.LockMigrations != nil {
		unlock, err := d.LockMigrations(ctx, conn)
		if err != nil {
			return s.wrap("locking schema migrations", err)
		}
		defer func() {
			// Unlock with a fresh context: ctx may be what failed.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if uerr := unlock(uctx); uerr != nil {
				err = errors.Join(err, s.wrap("unlocking schema migrations", uerr))
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, d.MigrationsDDL); err != nil {
		return s.wrap("creating schema_migrations", err)
	}
	c := q{s: s, db: conn}
	var newest sql.NullInt64
	if err := c.row(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&newest); err != nil {
		return s.wrap("reading schema version", err)
	}
	if known := latest(ms); newest.Valid && int(newest.Int64) > known {
		return fmt.Errorf("%s schema is at version %d, newer than this binary knows (%d): upgrade the keeper", d.Name, newest.Int64, known)
	}
	for _, m := range ms {
		if err := s.applyMigration(ctx, conn, m); err != nil {
			return err
		}
	}
	return nil
}

func latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// applyMigration runs m in a transaction on conn unless it is recorded
// already; the check is inside the transaction so that it holds even
// without a migration lock (SQLite's write transactions are exclusive).
func (s *Store) applyMigration(ctx context.Context, conn *sql.Conn, m Migration) error {
	op := "applying migration " + m.Name
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(op, err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit
	c := q{s: s, db: tx}
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil {
		return s.wrap(op, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return s.wrap(op, err)
	}
	if _, err := c.exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, s.ts(s.now())); err != nil {
		return s.wrap(op, err)
	}
	return s.wrap(op, tx.Commit())
}
