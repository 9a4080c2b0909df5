// Package sqlstore implements store.Store once, over database/sql, for every
// SQL dialect Soul Stack supports. The sqlite and postgres packages open the
// connections, describe their dialect (placeholders, time encoding, error
// classification, migration locking) and hand both to New; every query and
// every transaction boundary lives here, so the two backends cannot drift.
//
// Queries are written with `?` placeholders and only with SQL both SQLite
// (3.35+) and PostgreSQL accept: INSERT … ON CONFLICT … DO UPDATE/NOTHING,
// RETURNING, and conditional UPDATEs instead of SELECT … FOR UPDATE, so that
// the row lock PostgreSQL takes on UPDATE and the single writer SQLite allows
// give the same guarantees.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var _ store.Store = (*Store)(nil)

// ErrorClass is how a Dialect classifies a driver error.
type ErrorClass int

// Error classes a Dialect reports.
const (
	ClassOther       ErrorClass = iota
	ClassUnique                 // unique or primary key violation
	ClassForeignKey             // foreign key violation
	ClassUnavailable            // the database cannot be reached or is shutting down
)

// Dialect describes what differs between SQL backends.
type Dialect struct {
	// Name is the backend's name, used in error messages.
	Name string
	// Reason, optional, says in a few words why an error Classify calls
	// ClassUnavailable happened ("the disk is full"), for the message
	// clients see (they do not see the driver's error).
	Reason func(error) string
	// Numbered selects $1, $2 … placeholders instead of ?.
	Numbered bool
	// Time encodes a UTC timestamp truncated to microseconds as a query
	// argument that sorts and compares correctly in the dialect.
	Time func(t time.Time) any
	// FactText returns an SQL expression (and its arguments) for the text
	// of the JSON value at path in the JSON column col: NULL when absent,
	// "true"/"false" for booleans, numbers as JSON writes them. The keys
	// are checked by store.FactPath.
	FactText func(col string, path []string) (string, []any)
	// TextSet is a subquery yielding one row per string of the JSON array
	// of strings passed as its single ? argument (a set of any size in one
	// query argument).
	TextSet string
	// Classify sorts driver errors into the classes the store maps to
	// domain codes.
	Classify func(err error) ErrorClass
	// MigrationsDDL creates the schema_migrations table if it is missing.
	MigrationsDDL string
	// LockMigrations, when set, serializes migrations across processes on
	// conn and returns the function that releases the lock.
	LockMigrations func(ctx context.Context, conn *sql.Conn) (unlock func(context.Context) error, err error)
	// ScrubbedDelete, when set, runs query (a DELETE from table, already
	// in the dialect's placeholders) so that the deleted values do not
	// linger in the database's files — in the free space of a page, a
	// write-ahead log not yet checkpointed, dead tuples — and returns how
	// many rows it deleted. DeleteSetting uses it: the only setting ever
	// deleted is the signing key an older version kept in the database
	// (audit M6), and a copy of the file must not give it away.
	ScrubbedDelete func(ctx context.Context, db *sql.DB, table, query string, args ...any) (int64, error)
}

// Store implements store.Store on database/sql.
type Store struct {
	r, w    *sql.DB // readers and writers; the same pool unless the dialect needs a single writer
	d       Dialect
	rebinds sync.Map // query with ? → query with $n
	hosts   sync.Map // SID → result_hosts.id (never deleted, so never stale)
	now     func() time.Time
}

// New returns a Store reading through r and writing through w (which may be
// the same pool). The caller has already applied migrations (see Migrate).
func New(r, w *sql.DB, d Dialect) *Store {
	return &Store{r: r, w: w, d: d, now: time.Now}
}

// Ping checks that both pools reach the database.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return s.wrap("ping", err)
	}
	if s.w != s.r {
		if err := s.w.PingContext(ctx); err != nil {
			return s.wrap("ping", err)
		}
	}
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return s.wrap("ping", err)
	}
	return nil
}

// Close closes the connection pools.
func (s *Store) Close() error {
	err := s.r.Close()
	if s.w != s.r {
		err = errors.Join(err, s.w.Close())
	}
	return err
}

// querier is what *sql.DB, *sql.Tx and *sql.Conn have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// q runs dialect-neutral queries (with ? placeholders) on a querier.
type q struct {
	s  *Store
	db querier
}

func (s *Store) reader() q { return q{s: s, db: s.r} }

func (c q) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.db.ExecContext(ctx, c.s.rebind(query), args...)
}

func (c q) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.db.QueryContext(ctx, c.s.rebind(query), args...)
}

func (c q) row(ctx context.Context, query string, args ...any) *sql.Row {
	return c.db.QueryRowContext(ctx, c.s.rebind(query), args...)
}

// affected executes a statement and returns how many rows it changed.
func (c q) affected(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// inTx runs fn in one write transaction, committing when fn returns nil.
// Errors are classified and prefixed with op.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx q) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(op, err)
	}
	if err := fn(q{s: s, db: tx}); err != nil {
		_ = tx.Rollback() // the error that made us roll back is the one to report
		return s.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// write runs one auto-committed statement on the writer pool and returns
// the number of affected rows.
func (s *Store) write(ctx context.Context, query string, args ...any) (int64, error) {
	return q{s: s, db: s.w}.affected(ctx, query, args...)
}

// rebind turns ? placeholders into $n for numbered dialects, skipping
// quoted literals and identifiers.
func (s *Store) rebind(query string) string {
	if !s.d.Numbered {
		return query
	}
	if v, ok := s.rebinds.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	s.rebinds.Store(query, out)
	return out
}

// placeholders returns "?, ?, …" with n placeholders.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// wrap classifies err and prefixes it with op. Domain errors keep their
// code; driver errors become CodeUnavailable or CodeConflict when the
// dialect recognizes them.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) {
		// Domain errors keep their code; a caller that went away is not
		// an unavailable database.
		return fmt.Errorf("%s: %w", op, err)
	}
	if isClosedDB(err) {
		return &domain.Error{Code: domain.CodeUnavailable, Message: op + ": " + s.d.Name + " store is closed", Err: err}
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		return &domain.Error{Code: domain.CodeUnavailable, Message: op + ": " + s.d.Name + " connection lost", Err: err}
	}
	switch s.d.Classify(err) {
	case ClassUnavailable:
		msg := op + ": " + s.d.Name + " database unavailable"
		if s.d.Reason != nil {
			if why := s.d.Reason(err); why != "" {
				msg += " (" + why + ")"
			}
		}
		return &domain.Error{Code: domain.CodeUnavailable, Message: msg, Err: err}
	case ClassUnique:
		return &domain.Error{Code: domain.CodeConflict, Message: op + ": already exists", Err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isClosedDB matches database/sql's unexported "database is closed" error,
// returned after Close: callers see the store as unavailable.
func isClosedDB(err error) bool {
	return strings.Contains(err.Error(), "sql: database is closed")
}

// notFound is the error for a missing record: errors.Is(err,
// domain.ErrNotFound) holds and domain.ErrorCode is CodeNotFound.
func notFound(kind, key string) error {
	return &domain.Error{Code: domain.CodeNotFound, Message: fmt.Sprintf("%s %q does not exist", kind, key), Err: domain.ErrNotFound}
}

// conflict is a CodeConflict error with details.
func conflict(details any, format string, args ...any) error {
	return &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf(format, args...), Details: details}
}

// invalid is a CodeInvalid error: the caller passed something the contract
// does not allow.
func invalid(format string, args ...any) error {
	return domain.Errorf(domain.CodeInvalid, format, args...)
}

// limitClause returns " LIMIT ?" and its argument when limit > 0.
func limitClause(limit int, args []any) (string, []any) {
	if limit <= 0 {
		return "", args
	}
	return " LIMIT ?", append(args, limit)
}
