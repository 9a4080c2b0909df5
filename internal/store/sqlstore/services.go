package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/soulstack/soulstack/internal/store"
)

const serviceCols = `name, git, ref, commit_id, description, created_at, updated_at`

func scanService(sc interface{ Scan(...any) error }) (store.Service, error) {
	var sv store.Service
	err := sc.Scan(&sv.Name, &sv.Git, &sv.Ref, &sv.Commit, &sv.Description, timeCol{&sv.CreatedAt}, timeCol{&sv.UpdatedAt})
	return sv, err
}

// CreateService registers a service; conflict when the name is taken.
func (s *Store) CreateService(ctx context.Context, sv store.Service) error {
	created := s.orNow(sv.CreatedAt)
	updated := sv.UpdatedAt
	if updated.IsZero() {
		updated = created
	}
	_, err := s.write(ctx, `INSERT INTO services (`+serviceCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		sv.Name, sv.Git, sv.Ref, sv.Commit, sv.Description, s.ts(created), s.ts(updated))
	return s.wrap("creating service "+sv.Name, err)
}

// GetService returns the service called name.
func (s *Store) GetService(ctx context.Context, name string) (store.Service, error) {
	sv, err := scanService(s.reader().row(ctx, `SELECT `+serviceCols+` FROM services WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return sv, notFound("service", name)
	}
	return sv, s.wrap("reading service", err)
}

// ListServices returns every service, sorted by name.
func (s *Store) ListServices(ctx context.Context) ([]store.Service, error) {
	rows, err := s.reader().query(ctx, `SELECT `+serviceCols+` FROM services ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing services", err)
	}
	out, err := collect(rows, scanService)
	return out, s.wrap("listing services", err)
}

// UpdateService replaces the service's source, ref, commit and description.
func (s *Store) UpdateService(ctx context.Context, sv store.Service) error {
	n, err := s.write(ctx, `UPDATE services SET git = ?, ref = ?, commit_id = ?, description = ?, updated_at = ?
		WHERE name = ?`, sv.Git, sv.Ref, sv.Commit, sv.Description, s.ts(s.orNow(sv.UpdatedAt)), sv.Name)
	if err != nil {
		return s.wrap("updating service "+sv.Name, err)
	}
	if n == 0 {
		return notFound("service", sv.Name)
	}
	return nil
}

// DeleteService removes a service no incarnation uses; conflict (Details:
// the incarnation names) otherwise.
func (s *Store) DeleteService(ctx context.Context, name string) error {
	return s.inTx(ctx, "deleting service "+name, func(tx q) error {
		rows, err := tx.query(ctx, `SELECT name FROM incarnations WHERE service = ? ORDER BY name`, name)
		if err != nil {
			return err
		}
		users, err := collect(rows, func(sc interface{ Scan(...any) error }) (string, error) {
			var n string
			return n, sc.Scan(&n)
		})
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return conflict(users, "service %q is used by incarnations %v", name, users)
		}
		n, err := tx.affected(ctx, `DELETE FROM services WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("service", name)
		}
		return nil
	})
}
