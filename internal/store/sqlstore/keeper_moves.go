package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/soulstack/soulstack/internal/store"
)

// RequestKeeperMove records keeper m.KeeperID's move request, replacing
// one not taken yet.
func (s *Store) RequestKeeperMove(ctx context.Context, m store.KeeperMove) error {
	drain := 0
	if m.Drain {
		drain = 1
	}
	_, err := s.write(ctx, `INSERT INTO keeper_moves (keeper_id, drain, souls, by_id, requested_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (keeper_id) DO UPDATE SET drain = excluded.drain, souls = excluded.souls,
		by_id = excluded.by_id, requested_at = excluded.requested_at`,
		m.KeeperID, drain, m.Souls, m.By, s.ts(s.orNow(m.RequestedAt)))
	return s.wrap("requesting keeper "+m.KeeperID+" to move souls", err)
}

// TakeKeeperMove removes and returns keeper id's move request.
func (s *Store) TakeKeeperMove(ctx context.Context, id string) (store.KeeperMove, bool, error) {
	m := store.KeeperMove{KeeperID: id}
	var drain int
	err := s.reader().row(ctx, `SELECT drain, souls, by_id, requested_at FROM keeper_moves WHERE keeper_id = ?`, id).
		Scan(&drain, &m.Souls, &m.By, timeCol{&m.RequestedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return store.KeeperMove{}, false, nil
	}
	if err != nil {
		return store.KeeperMove{}, false, s.wrap("reading keeper move request", err)
	}
	m.Drain = drain != 0
	// Only this request: a newer one stays for the next look.
	n, err := s.write(ctx, `DELETE FROM keeper_moves WHERE keeper_id = ? AND requested_at = ?`, id, s.ts(m.RequestedAt))
	if err != nil {
		return store.KeeperMove{}, false, s.wrap("taking keeper move request", err)
	}
	return m, n > 0, nil
}
