// Package postgres is the production store: PostgreSQL through pgx's
// database/sql driver. Several keepers may share one database; migrations
// are serialized between them with an advisory lock.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a store.Store on PostgreSQL.
type Store struct {
	*sqlstore.Store
}

var _ store.Store = (*Store)(nil)

// Pool sizing: enough for a keeper's concurrent API requests, run engine
// and gateway, few enough that several keepers fit PostgreSQL's default
// max_connections (100). Idle connections are kept up to the same bound
// (closed after connMaxIdleTime), so a burst of relayed work does not pay a
// new connection per request: measured 440 → ~1,900 relayed requests/s.
const (
	maxOpenConns    = 20
	maxIdleConns    = maxOpenConns
	connMaxIdleTime = 5 * time.Minute
)

// migrationLockKey is the advisory lock key held while migrating
// ("soulstac" in ASCII).
const migrationLockKey int64 = 0x736f756c73746163

// Open connects to the database at databaseURL (a postgres:// URL or a
// libpq key=value string) and applies pending migrations. An unreachable
// server is a *domain.Error with CodeUnavailable.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, &domain.Error{Code: domain.CodeInvalid, Message: "postgres store: invalid database URL", Err: err}
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	ms, err := migrations()
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := sqlstore.Migrate(ctx, db, dialect, ms); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres store %s@%s/%s: %w", cfg.User, cfg.Host, cfg.Database, err)
	}
	return &Store{Store: sqlstore.New(db, db, dialect)}, nil
}

func migrations() ([]sqlstore.Migration, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return sqlstore.LoadMigrations(sub)
}

// dialect is PostgreSQL's description for sqlstore.
var dialect = sqlstore.Dialect{
	Name:     "postgres",
	Numbered: true,
	TextSet:  `SELECT jsonb_array_elements_text(?::jsonb)`,
	Time:     func(t time.Time) any { return t },
	FactText: func(col string, path []string) (string, []any) {
		args := make([]any, len(path))
		for i, k := range path {
			args[i] = k
		}
		return `jsonb_extract_path_text(` + col + `, ` + strings.TrimSuffix(strings.Repeat("?::text, ", len(path)), ", ") + `)`, args
	},
	Classify: classify,
	MigrationsDDL: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL
	)`,
	LockMigrations: func(ctx context.Context, conn *sql.Conn) (func(context.Context) error, error) {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey)
			return err
		}, nil
	},
	ScrubbedDelete: scrubbedDelete,
}

// classify maps pgx errors to sqlstore classes by SQLSTATE, or by the
// network failure underneath.
func classify(err error) sqlstore.ErrorClass {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return sqlstore.ClassUnique
		case pe.Code == "23503":
			return sqlstore.ClassForeignKey
		case pe.Code[:2] == "08", // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, cannot connect now
			pe.Code == "53300": // too many connections
			return sqlstore.ClassUnavailable
		}
		return sqlstore.ClassOther
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return sqlstore.ClassUnavailable
	}
	return sqlstore.ClassOther
}
