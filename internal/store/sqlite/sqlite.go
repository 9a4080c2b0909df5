// Package sqlite is the embedded default store: a single SQLite file in the
// keeper's data directory, driven by the pure-Go modernc.org/sqlite.
//
// The database runs in WAL mode with foreign keys on. Writes go through a
// pool of exactly one connection, so concurrent writers queue in Go instead
// of failing with SQLITE_BUSY; reads use a separate pool of read-only
// connections that WAL lets proceed alongside the writer. busy_timeout
// covers the remaining case of another process holding the file.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlstore"
)

// DefaultFileName is the database file's name inside the keeper's data
// directory.
const DefaultFileName = "keeper.db"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a store.Store on a SQLite file.
type Store struct {
	*sqlstore.Store
	path string
}

var _ store.Store = (*Store)(nil)

// busyTimeout is how long a connection waits for a lock held by another
// process before failing.
const busyTimeout = 10 * time.Second

// Open opens (creating it and its directory if needed) the SQLite database
// at path and applies pending migrations. The file is created with mode
// 0600: it holds the keeper's signing key.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, domain.Errorf(domain.CodeInvalid, "sqlite store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	if err := createFile(abs); err != nil {
		return nil, unavailable(abs, err)
	}
	w, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store %s: %w", abs, err)
	}
	// One writer: SQLite allows one write transaction at a time anyway, and
	// queueing in database/sql is fair and never returns SQLITE_BUSY.
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", abs, err)
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	r.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))

	ms, err := migrations()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	// Migrate through the writer first: it creates the file's WAL before
	// any read-only connection opens it.
	if err := sqlstore.Migrate(ctx, w, dialect, ms); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite store %s: %w", abs, err)
	}
	return &Store{Store: sqlstore.New(r, w, dialect), path: abs}, nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

func migrations() ([]sqlstore.Migration, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return sqlstore.LoadMigrations(sub)
}

// createFile makes sure the database file exists with owner-only
// permissions before SQLite opens it (SQLite would create it 0644).
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn builds the modernc.org/sqlite connection string: WAL, foreign keys,
// busy timeout, full sync on every connection; IMMEDIATE transactions for the writer
// (it takes the write lock at BEGIN, so a transaction never fails half-way
// on an upgrade from reader to writer); query_only for readers.
func dsn(path string, readOnly bool) string {
	v := url.Values{}
	v.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "journal_mode(WAL)")
	// FULL: a committed run survives power loss, not just a crash of
	// the keeper; commits are rare enough for the fsync.
	v.Add("_pragma", "synchronous(FULL)")
	if readOnly {
		v.Add("_pragma", "query_only(1)")
	} else {
		v.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()
}

// unavailable wraps a failure to reach the database file.
func unavailable(path string, err error) error {
	return &domain.Error{Code: domain.CodeUnavailable, Message: "sqlite store " + path + " unavailable", Err: err}
}

// dialect is SQLite's description for sqlstore.
var dialect = sqlstore.Dialect{
	Name:    "sqlite",
	TextSet: `SELECT value FROM json_each(?)`,
	Time:    func(t time.Time) any { return t.Format(sqlstore.TextTimeLayout) },
	FactText: func(col string, path []string) (string, []any) {
		// json_extract gives booleans as 1/0: json_type tells them apart.
		p := `$."` + strings.Join(path, `"."`) + `"`
		return `(CASE json_type(` + col + `, ?) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
			ELSE CAST(json_extract(` + col + `, ?) AS TEXT) END)`, []any{p, p}
	},
	Classify: func(err error) sqlstore.ErrorClass {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return sqlstore.ClassOther
		}
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return sqlstore.ClassUnique
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return sqlstore.ClassForeignKey
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_NOTADB:
			return sqlstore.ClassUnavailable
		}
		return sqlstore.ClassOther
	},
	Reason: func(err error) string {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return ""
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return "the disk is full"
		case sqlite3.SQLITE_READONLY:
			return "the database file is read-only"
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return "the database is locked by another process"
		case sqlite3.SQLITE_IOERR:
			return "disk I/O error"
		case sqlite3.SQLITE_CANTOPEN:
			return "the database file cannot be opened"
		case sqlite3.SQLITE_NOTADB:
			return "the file is not a SQLite database"
		}
		return ""
	},
	MigrationsDDL: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`,
	ScrubbedDelete: scrubbedDelete,
}
