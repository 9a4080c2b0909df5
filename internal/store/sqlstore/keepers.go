package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

const keeperCols = `id, address, version, checker_token_id, started_at, heartbeat_at`

func scanKeeper(sc interface{ Scan(...any) error }) (store.KeeperRecord, error) {
	var k store.KeeperRecord
	err := sc.Scan(&k.ID, &k.Address, &k.Version, &k.CheckerTokenID, timeCol{&k.StartedAt}, timeCol{&k.HeartbeatAt})
	return k, err
}

// RegisterKeeper inserts or replaces keeper k's row.
func (s *Store) RegisterKeeper(ctx context.Context, k store.KeeperRecord) error {
	started := s.orNow(k.StartedAt)
	beat := k.HeartbeatAt
	if beat.IsZero() {
		beat = started
	}
	_, err := s.write(ctx, `INSERT INTO keepers (`+keeperCols+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version,
		checker_token_id = excluded.checker_token_id, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
		k.ID, k.Address, k.Version, k.CheckerTokenID, s.ts(started), s.ts(beat))
	return s.wrap("registering keeper "+k.ID, err)
}

// GetKeeper returns keeper id's row.
func (s *Store) GetKeeper(ctx context.Context, id string) (store.KeeperRecord, error) {
	k, err := scanKeeper(s.reader().row(ctx, `SELECT `+keeperCols+` FROM keepers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return k, notFound("keeper", id)
	}
	return k, s.wrap("reading keeper", err)
}

// ListKeepers returns every keeper row, by id.
func (s *Store) ListKeepers(ctx context.Context) ([]store.KeeperRecord, error) {
	rows, err := s.reader().query(ctx, `SELECT `+keeperCols+` FROM keepers ORDER BY id`)
	if err != nil {
		return nil, s.wrap("listing keepers", err)
	}
	out, err := collect(rows, scanKeeper)
	return out, s.wrap("listing keepers", err)
}

// KeeperHeartbeat sets keeper id's heartbeat to at; ErrNotFound when its
// row is gone (the leader declared it dead, or it never registered).
func (s *Store) KeeperHeartbeat(ctx context.Context, id string, at time.Time) error {
	n, err := s.write(ctx, `UPDATE keepers SET heartbeat_at = ? WHERE id = ?`, s.ts(at), id)
	if err != nil {
		return s.wrap("keeper heartbeat", err)
	}
	if n == 0 {
		return notFound("keeper", id)
	}
	return nil
}

// DeleteKeeper deletes keeper id's row if its heartbeat is before
// staleBefore (zero: whatever its heartbeat) and reports whether it did:
// of several keepers cleaning up after a dead one, exactly one wins.
func (s *Store) DeleteKeeper(ctx context.Context, id string, staleBefore time.Time) (bool, error) {
	query, args := `DELETE FROM keepers WHERE id = ?`, []any{id}
	if !staleBefore.IsZero() {
		query += ` AND heartbeat_at < ?`
		args = append(args, s.ts(staleBefore))
	}
	n, err := s.write(ctx, query, args...)
	if err != nil {
		return false, s.wrap("deleting keeper "+id, err)
	}
	return n == 1, nil
}
