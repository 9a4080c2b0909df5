package sqlite

import (
	"context"
	"database/sql"

	"github.com/soulstack/soulstack/internal/store/sqlstore"
)

// MigrateOnlyTo creates the database at path with the migrations up to
// and including version max: the database an older keeper left.
func MigrateOnlyTo(ctx context.Context, path string, max int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var old []sqlstore.Migration
	for _, m := range ms {
		if m.Version <= max {
			old = append(old, m)
		}
	}
	if err := createFile(path); err != nil {
		return err
	}
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return err
	}
	defer w.Close()
	return sqlstore.Migrate(ctx, w, dialect, old)
}
