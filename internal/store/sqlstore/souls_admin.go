package sqlstore

import (
	"context"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// DeleteSoul forgets a soul: its record, its covens and its incarnation
// memberships, in one transaction (SPEC §10.3: a reinstalled host, or a
// squatted SID, can join again).
func (s *Store) DeleteSoul(ctx context.Context, sid string) ([]string, error) {
	var incs []string
	err := s.inTx(ctx, "deleting soul "+sid, func(tx q) error {
		if err := mustExist(ctx, tx, "soul", "souls", "sid", sid); err != nil {
			return err
		}
		rows, err := tx.query(ctx, `SELECT incarnation FROM incarnation_members WHERE sid = ? ORDER BY incarnation`, sid)
		if err != nil {
			return err
		}
		if incs, err = collect(rows, func(sc interface{ Scan(...any) error }) (string, error) {
			var n string
			err := sc.Scan(&n)
			return n, err
		}); err != nil {
			return err
		}
		for _, stmt := range []string{
			`DELETE FROM incarnation_members WHERE sid = ?`,
			`DELETE FROM soul_covens WHERE sid = ?`,
			`DELETE FROM souls WHERE sid = ?`,
		} {
			if _, err := tx.exec(ctx, stmt, sid); err != nil {
				return err
			}
		}
		return nil
	})
	return incs, err
}

// RekeySoul binds the soul to a new public key; a connected soul becomes
// disconnected (its stream holds the old key).
func (s *Store) RekeySoul(ctx context.Context, sid string, publicKey []byte, at time.Time) error {
	return s.updateSoul(ctx, "rekeying soul", sid,
		`UPDATE souls SET public_key = ?,
			status = CASE WHEN status = ? THEN ? ELSE status END,
			keeper_id = CASE WHEN status = ? THEN '' ELSE keeper_id END,
			last_seen = ? WHERE sid = ?`,
		publicKey, store.SoulConnected, store.SoulDisconnected, store.SoulConnected, s.ts(at), sid)
}
