package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// scrubbedDelete runs a DELETE and, when it deleted rows, rewrites table
// with VACUUM FULL: the deleted row stays as a dead tuple in the table's
// file until vacuumed, and VACUUM FULL writes the live rows to a new file
// and removes the old one. (Backups and archived WAL made before keep the
// row: no database can take that back.) VACUUM runs outside any
// transaction, after the DELETE committed; it locks only table, briefly
// (the tables it is used on are a handful of rows).
func scrubbedDelete(ctx context.Context, db *sql.DB, table, query string, args ...any) (int64, error) {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	if _, err := db.ExecContext(ctx, `VACUUM FULL `+pgx.Identifier{table}.Sanitize()); err != nil {
		return n, fmt.Errorf("rewriting %s after a scrubbed delete: %w", table, err)
	}
	return n, nil
}
