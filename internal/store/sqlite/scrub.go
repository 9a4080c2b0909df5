package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// scrubbedDelete runs a DELETE with secure_delete on, so SQLite overwrites
// the deleted content with zeros instead of leaving it in the page's free
// space, then checkpoints the write-ahead log into the database file and
// truncates it: afterwards neither file holds the deleted bytes (a copy of
// keeper.db taken later gives them away no more). secure_delete is turned
// off again before the connection goes back to the pool.
func scrubbedDelete(ctx context.Context, db *sql.DB, table, query string, args ...any) (int64, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return 0, fmt.Errorf("turning secure_delete on: %w", err)
	}
	n, err := deleteAndCheckpoint(ctx, conn, query, args...)
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA secure_delete = OFF`); rerr != nil {
		// A connection left in secure mode must not serve other writes.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		err = errors.Join(err, fmt.Errorf("turning secure_delete off: %w", rerr))
	}
	return n, err
}

// deleteAndCheckpoint runs query on conn and, when it deleted rows,
// checkpoints the write-ahead log into the database file.
func deleteAndCheckpoint(ctx context.Context, conn *sql.Conn, query string, args ...any) (int64, error) {
	res, err := conn.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	// A checkpoint blocked by a reader reports busy and leaves the old page
	// in keeper.db until a later one: the next checkpoint overwrites it.
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return n, fmt.Errorf("checkpointing after a scrubbed delete: %w", err)
	}
	return n, nil
}
