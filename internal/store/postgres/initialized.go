package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/soulstack/soulstack/internal/domain"
)

// Initialized reports whether the database at databaseURL holds a Soul
// Stack schema (its schema_migrations table), without writing anything:
// Open migrates, which on the wrong or an uninitialized database would
// create every table before the keeper finds it has no keys.
func Initialized(ctx context.Context, databaseURL string) (bool, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return false, &domain.Error{Code: domain.CodeInvalid, Message: "postgres store: invalid database URL", Err: err}
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	var ok bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&ok); err != nil {
		return false, &domain.Error{Code: domain.CodeUnavailable,
			Message: fmt.Sprintf("postgres store %s@%s/%s unreachable", cfg.User, cfg.Host, cfg.Database), Err: err}
	}
	return ok, nil
}

// CountArchons counts the Archons in the initialized database at
// databaseURL without migrating or writing it: an initialized keeper has
// at least one, so none means a database emptied or restored wrong.
func CountArchons(ctx context.Context, databaseURL string) (int, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return 0, &domain.Error{Code: domain.CodeInvalid, Message: "postgres store: invalid database URL", Err: err}
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM archons`).Scan(&n); err != nil {
		return 0, &domain.Error{Code: domain.CodeUnavailable,
			Message: fmt.Sprintf("postgres store %s@%s/%s: counting archons", cfg.User, cfg.Host, cfg.Database), Err: err}
	}
	return n, nil
}
