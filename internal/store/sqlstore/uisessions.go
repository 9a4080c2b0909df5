package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// uiSessionGrace is how long an ended session's row is kept before
// CreateUISession drops it.
const uiSessionGrace = 24 * time.Hour

// CreateUISession stores a web UI session and drops those that ended more
// than a day ago (expired, or revoked at logout).
func (s *Store) CreateUISession(ctx context.Context, u store.UISession) error {
	return s.inTx(ctx, "creating ui session", func(tx q) error {
		if err := mustExist(ctx, tx, "token", "tokens", "id", u.TokenID); err != nil {
			return err
		}
		if err := mustExist(ctx, tx, "archon", "archons", "id", u.ArchonID); err != nil {
			return err
		}
		created := s.orNow(u.CreatedAt)
		old := s.ts(created.Add(-uiSessionGrace))
		if _, err := tx.exec(ctx, `DELETE FROM ui_sessions WHERE expires_at < ? OR revoked_at < ?`, old, old); err != nil {
			return err
		}
		seen := u.LastSeenAt
		if seen.IsZero() {
			seen = created
		}
		_, err := tx.exec(ctx, `INSERT INTO ui_sessions (id_hash, archon_id, token_id, created_at, expires_at, last_seen_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			u.IDHash, u.ArchonID, u.TokenID, s.ts(created), s.ts(u.ExpiresAt), s.ts(seen), s.tsPtr(u.RevokedAt))
		return err
	})
}

// GetUISession returns the session whose id hashes to idHash.
func (s *Store) GetUISession(ctx context.Context, idHash []byte) (store.UISession, error) {
	var u store.UISession
	err := s.reader().row(ctx, `SELECT id_hash, archon_id, token_id, created_at, expires_at, last_seen_at, revoked_at
		FROM ui_sessions WHERE id_hash = ?`, idHash).Scan(&u.IDHash, &u.ArchonID, &u.TokenID,
		timeCol{&u.CreatedAt}, timeCol{&u.ExpiresAt}, timeCol{&u.LastSeenAt}, nullTimeCol{&u.RevokedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return store.UISession{}, notFound("ui session", "")
	}
	return u, s.wrap("reading ui session", err)
}

// TouchUISession moves the session's last activity forward to at.
func (s *Store) TouchUISession(ctx context.Context, idHash []byte, at time.Time) error {
	_, err := s.write(ctx, `UPDATE ui_sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at < ?`,
		s.ts(at), idHash, s.ts(at))
	return s.wrap("touching ui session", err)
}

// RevokeUISession ends the session at at; the first end time is kept.
func (s *Store) RevokeUISession(ctx context.Context, idHash []byte, at time.Time) error {
	_, err := s.write(ctx, `UPDATE ui_sessions SET revoked_at = ? WHERE id_hash = ? AND revoked_at IS NULL`,
		s.ts(at), idHash)
	return s.wrap("ending ui session", err)
}
