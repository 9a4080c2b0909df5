package sqlstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// MarkSoulConnected records an accepted soul connected to keeperID. One
// conditional UPDATE: an Archon's reject committed before it is never
// overwritten.
func (s *Store) MarkSoulConnected(ctx context.Context, sid, keeperID string, at time.Time) error {
	return s.inTx(ctx, "recording soul "+sid+" connected", func(tx q) error {
		n, err := tx.affected(ctx, `UPDATE souls SET status = ?, keeper_id = ?, last_seen = ?
			WHERE sid = ? AND status IN (?, ?)`,
			store.SoulConnected, keeperID, s.ts(at), sid, store.SoulConnected, store.SoulDisconnected)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := mustExist(ctx, tx, "soul", "souls", "sid", sid); err != nil {
				return err
			}
			return conflict(nil, "soul %s is not accepted (pending or rejected)", sid)
		}
		return nil
	})
}

// MarkSoulDisconnected records the soul disconnected if it is connected
// to keeperID.
func (s *Store) MarkSoulDisconnected(ctx context.Context, sid, keeperID string, at time.Time) error {
	_, err := s.write(ctx, `UPDATE souls SET status = ?, last_seen = ? WHERE sid = ? AND status = ? AND keeper_id = ?`,
		store.SoulDisconnected, s.ts(at), sid, store.SoulConnected, keeperID)
	return s.wrap("recording soul "+sid+" disconnected", err)
}

// MarkSoulsDisconnected runs MarkSoulDisconnected for every soul of seen
// in one transaction.
func (s *Store) MarkSoulsDisconnected(ctx context.Context, keeperID string, seen map[string]time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	return s.inTx(ctx, fmt.Sprintf("recording %d souls disconnected", len(seen)), func(tx q) error {
		for _, sid := range slices.Sorted(maps.Keys(seen)) {
			if _, err := tx.exec(ctx, `UPDATE souls SET status = ?, last_seen = ? WHERE sid = ? AND status = ? AND keeper_id = ?`,
				store.SoulDisconnected, s.ts(seen[sid]), sid, store.SoulConnected, keeperID); err != nil {
				return err
			}
		}
		return nil
	})
}

// AcceptSoul accepts a soul still pending or rejected under expectKey. The
// UPDATE's condition is re-checked after a concurrent writer's row lock
// (PostgreSQL) or under the single writer (SQLite).
func (s *Store) AcceptSoul(ctx context.Context, sid string, covens []string, expectKey []byte) error {
	covens = sortedSet(covens)
	return s.inTx(ctx, "accepting soul "+sid, func(tx q) error {
		n, err := tx.affected(ctx, `UPDATE souls SET status = ?, keeper_id = '', covens = ?
			WHERE sid = ? AND status IN (?, ?) AND public_key = ?`,
			store.SoulDisconnected, strList(covens), sid, store.SoulPending, store.SoulRejected, expectKey)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := mustExist(ctx, tx, "soul", "souls", "sid", sid); err != nil {
				return err
			}
			return conflict(nil, "soul %s is no longer pending or rejected under the key it had", sid)
		}
		return replaceSoulCovens(ctx, tx, sid, covens)
	})
}
