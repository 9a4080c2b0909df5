package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/soulstack/soulstack/internal/store"
)

// PutSecret inserts a secret or replaces an existing one's ciphertext,
// keeping its owner and creation time.
func (s *Store) PutSecret(ctx context.Context, sec store.Secret) error {
	if sec.Name == "" || len(sec.Ciphertext) == 0 {
		return s.wrap("storing a secret", invalid("a secret needs a name and a sealed value"))
	}
	now := s.orNow(sec.UpdatedAt)
	if sec.ScopeKind == "" {
		sec.ScopeKind = store.ScopeKeeper
	}
	_, err := s.write(ctx, `INSERT INTO secrets (name, ciphertext, owner, created_at, updated_at, scope_kind, scope) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at,
			scope_kind = excluded.scope_kind, scope = excluded.scope`,
		sec.Name, sec.Ciphertext, sec.Owner, s.ts(now), s.ts(now), sec.ScopeKind, sec.Scope)
	return s.wrap("storing secret "+sec.Name, err)
}

// GetSecret returns a secret with its ciphertext.
func (s *Store) GetSecret(ctx context.Context, name string) (store.Secret, error) {
	var sec store.Secret
	err := s.reader().row(ctx, `SELECT name, owner, created_at, updated_at, scope_kind, scope, ciphertext FROM secrets WHERE name = ?`, name).
		Scan(&sec.Name, &sec.Owner, timeCol{&sec.CreatedAt}, timeCol{&sec.UpdatedAt}, &sec.ScopeKind, &sec.Scope, &sec.Ciphertext)
	if errors.Is(err, sql.ErrNoRows) {
		return sec, notFound("secret", name)
	}
	return sec, s.wrap("reading secret "+name, err)
}

// ListSecrets lists every secret by name, without ciphertext.
func (s *Store) ListSecrets(ctx context.Context) ([]store.Secret, error) {
	rows, err := s.reader().query(ctx, `SELECT name, owner, created_at, updated_at, scope_kind, scope FROM secrets ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing secrets", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.Secret, error) {
		var sec store.Secret
		err := sc.Scan(&sec.Name, &sec.Owner, timeCol{&sec.CreatedAt}, timeCol{&sec.UpdatedAt}, &sec.ScopeKind, &sec.Scope)
		return sec, err
	})
	return out, s.wrap("listing secrets", err)
}

// DeleteSecret removes a secret.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	n, err := s.write(ctx, `DELETE FROM secrets WHERE name = ?`, name)
	if err != nil {
		return s.wrap("deleting secret "+name, err)
	}
	if n == 0 {
		return notFound("secret", name)
	}
	return nil
}
