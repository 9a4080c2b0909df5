package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

const soulCols = `sid, public_key, status, covens, soulprint, version, keeper_id, last_seen, created_at`

func scanSoul(sc interface{ Scan(...any) error }) (store.Soul, error) {
	var so store.Soul
	err := sc.Scan(&so.SID, &so.PublicKey, &so.Status, listCol{&so.Covens}, mapCol{m: &so.Soulprint, required: true},
		&so.Version, &so.KeeperID, timeCol{&so.LastSeen}, timeCol{&so.CreatedAt})
	return so, err
}

// UpsertSoul inserts the soul or replaces every field but CreatedAt.
func (s *Store) UpsertSoul(ctx context.Context, so store.Soul) error {
	return s.UpsertSouls(ctx, []store.Soul{so})
}

// upsertChunk is how many souls one statement of UpsertSouls writes (9
// arguments each, far below either dialect's limit on arguments).
const upsertChunk = 200

// UpsertSouls upserts every soul as UpsertSoul does, in one transaction,
// a chunk of souls per statement.
func (s *Store) UpsertSouls(ctx context.Context, souls []store.Soul) error {
	op := "storing souls"
	if len(souls) == 1 {
		op = "storing soul " + souls[0].SID
	}
	return s.inTx(ctx, op, func(tx q) error {
		for start := 0; start < len(souls); start += upsertChunk {
			if err := s.upsertSouls(ctx, tx, souls[start:min(start+upsertChunk, len(souls))]); err != nil {
				return err
			}
		}
		return nil
	})
}

// upsertSouls writes one chunk of UpsertSouls: the souls (a SID twice in
// a chunk: the last wins), then their coven index rows.
func (s *Store) upsertSouls(ctx context.Context, tx q, chunk []store.Soul) error {
	last := map[string]int{}
	for i, so := range chunk {
		last[so.SID] = i
	}
	var rows []string
	var args, sids, covenArgs []any
	for i, so := range chunk {
		if last[so.SID] != i {
			continue
		}
		soulprint, err := reqMap(so.Soulprint)
		if err != nil {
			return err
		}
		covens := sortedSet(so.Covens)
		rows = append(rows, `(?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		args = append(args, so.SID, so.PublicKey, so.Status, strList(covens), soulprint, so.Version, so.KeeperID,
			s.ts(so.LastSeen), s.ts(s.orNow(so.CreatedAt)))
		sids = append(sids, so.SID)
		for _, c := range covens {
			covenArgs = append(covenArgs, so.SID, c)
		}
	}
	if _, err := tx.exec(ctx, `INSERT INTO souls (`+soulCols+`) VALUES `+strings.Join(rows, ", ")+`
		ON CONFLICT (sid) DO UPDATE SET public_key = excluded.public_key, status = excluded.status,
			covens = excluded.covens, soulprint = excluded.soulprint, version = excluded.version,
			keeper_id = excluded.keeper_id, last_seen = excluded.last_seen`, args...); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `DELETE FROM soul_covens WHERE sid IN (`+placeholders(len(sids))+`)`, sids...); err != nil {
		return err
	}
	for start := 0; start < len(covenArgs); start += 2 * upsertChunk {
		part := covenArgs[start:min(start+2*upsertChunk, len(covenArgs))]
		if _, err := tx.exec(ctx, `INSERT INTO soul_covens (sid, coven) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?), ", len(part)/2), ", "), part...); err != nil {
			return err
		}
	}
	return nil
}

// CreateSoul inserts a new soul; conflict when the SID is registered.
func (s *Store) CreateSoul(ctx context.Context, so store.Soul) error {
	op := "registering soul " + so.SID
	soulprint, err := reqMap(so.Soulprint)
	if err != nil {
		return s.wrap(op, err)
	}
	covens := sortedSet(so.Covens)
	err = s.inTx(ctx, op, func(tx q) error {
		// A plain INSERT: a concurrent one for the same SID waits for this
		// transaction and then fails on the primary key.
		if _, err := tx.exec(ctx, `INSERT INTO souls (`+soulCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			so.SID, so.PublicKey, so.Status, strList(covens), soulprint, so.Version, so.KeeperID,
			s.ts(so.LastSeen), s.ts(s.orNow(so.CreatedAt))); err != nil {
			return err
		}
		return replaceSoulCovens(ctx, tx, so.SID, covens)
	})
	if domain.ErrorCode(err) == domain.CodeConflict {
		return &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("soul %s is already registered", so.SID), Err: err}
	}
	return err
}

// ReplacePendingSoul replaces the soul if it is still pending under
// pendingKey.
func (s *Store) ReplacePendingSoul(ctx context.Context, so store.Soul, pendingKey []byte) error {
	op := "replacing pending soul " + so.SID
	soulprint, err := reqMap(so.Soulprint)
	if err != nil {
		return s.wrap(op, err)
	}
	covens := sortedSet(so.Covens)
	return s.inTx(ctx, op, func(tx q) error {
		n, err := tx.affected(ctx, `UPDATE souls SET public_key = ?, status = ?, covens = ?, soulprint = ?, version = ?,
				keeper_id = ?, last_seen = ?
			WHERE sid = ? AND status = ? AND public_key = ?`,
			so.PublicKey, so.Status, strList(covens), soulprint, so.Version, so.KeeperID, s.ts(so.LastSeen),
			so.SID, store.SoulPending, pendingKey)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := mustExist(ctx, tx, "soul", "souls", "sid", so.SID); err != nil {
				return err
			}
			return conflict(nil, "soul %s is no longer pending under the key it had", so.SID)
		}
		return replaceSoulCovens(ctx, tx, so.SID, covens)
	})
}

// replaceSoulCovens rewrites the coven index rows of sid.
func replaceSoulCovens(ctx context.Context, tx q, sid string, covens []string) error {
	if _, err := tx.exec(ctx, `DELETE FROM soul_covens WHERE sid = ?`, sid); err != nil {
		return err
	}
	for _, c := range covens {
		if _, err := tx.exec(ctx, `INSERT INTO soul_covens (sid, coven) VALUES (?, ?)`, sid, c); err != nil {
			return err
		}
	}
	return nil
}

// GetSoul returns the soul with sid.
func (s *Store) GetSoul(ctx context.Context, sid string) (store.Soul, error) {
	so, err := scanSoul(s.reader().row(ctx, `SELECT `+soulCols+` FROM souls WHERE sid = ?`, sid))
	if errors.Is(err, sql.ErrNoRows) {
		return so, notFound("soul", sid)
	}
	return so, s.wrap("reading soul", err)
}

// ListSouls returns the souls matching f, sorted by SID.
func (s *Store) ListSouls(ctx context.Context, f store.SoulFilter) ([]store.Soul, error) {
	query, args := soulsQuery(f)
	scan := scanSoul
	if f.Brief {
		query = strings.Replace(query, soulCols, briefSoulCols, 1)
		scan = scanBriefSoul
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY sid`, args...)
	if err != nil {
		return nil, s.wrap("listing souls", err)
	}
	out, err := collect(rows, scan)
	return out, s.wrap("listing souls", err)
}

// soulsQuery selects the souls matching f (without an order).
func soulsQuery(f store.SoulFilter) (string, []any) {
	query := `SELECT ` + soulCols + ` FROM souls WHERE 1 = 1`
	var args []any
	if f.Status != "" {
		query += ` AND status = ?`
		args = append(args, f.Status)
	}
	if covens := sortedSet(f.Covens); len(covens) > 0 {
		query += ` AND sid IN (SELECT sid FROM soul_covens WHERE coven IN (` + placeholders(len(covens)) + `)
			GROUP BY sid HAVING COUNT(*) = ?)`
		for _, c := range covens {
			args = append(args, c)
		}
		args = append(args, len(covens))
	}
	return query, args
}

// updateSoul runs an UPDATE on one soul and reports ErrNotFound when it
// does not exist.
func (s *Store) updateSoul(ctx context.Context, op, sid, query string, args ...any) error {
	n, err := s.write(ctx, query, args...)
	if err != nil {
		return s.wrap(op, err)
	}
	if n == 0 {
		return notFound("soul", sid)
	}
	return nil
}

// SetSoulStatus sets the soul's status and keeper and marks it seen at at.
func (s *Store) SetSoulStatus(ctx context.Context, sid, status, keeperID string, at time.Time) error {
	return s.updateSoul(ctx, "setting soul status", sid,
		`UPDATE souls SET status = ?, keeper_id = ?, last_seen = ? WHERE sid = ?`, status, keeperID, s.ts(at), sid)
}

// UpdateSoulprint replaces the soul's facts and marks it seen at at.
func (s *Store) UpdateSoulprint(ctx context.Context, sid string, soulprint map[string]any, at time.Time) error {
	sp, err := reqMap(soulprint)
	if err != nil {
		return s.wrap("updating soulprint", err)
	}
	return s.updateSoul(ctx, "updating soulprint", sid,
		`UPDATE souls SET soulprint = ?, last_seen = ? WHERE sid = ?`, sp, s.ts(at), sid)
}

// SetSoulCovens replaces the soul's covens. Incarnation membership is a
// separate relation and does not change.
func (s *Store) SetSoulCovens(ctx context.Context, sid string, covens []string) error {
	covens = sortedSet(covens)
	return s.inTx(ctx, "setting soul covens", func(tx q) error {
		n, err := tx.affected(ctx, `UPDATE souls SET covens = ? WHERE sid = ?`, strList(covens), sid)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("soul", sid)
		}
		return replaceSoulCovens(ctx, tx, sid, covens)
	})
}

// TouchSoul marks the soul seen at at.
func (s *Store) TouchSoul(ctx context.Context, sid string, at time.Time) error {
	return s.updateSoul(ctx, "touching soul", sid, `UPDATE souls SET last_seen = ? WHERE sid = ?`, s.ts(at), sid)
}

// TouchSouls marks many souls seen in one transaction (a keeper's
// housekeeping over its whole fleet), skipping unknown SIDs.
func (s *Store) TouchSouls(ctx context.Context, seen map[string]time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	return s.inTx(ctx, fmt.Sprintf("touching %d souls", len(seen)), func(tx q) error {
		for _, sid := range slices.Sorted(maps.Keys(seen)) { // one lock order across keepers
			if _, err := tx.exec(ctx, `UPDATE souls SET last_seen = ? WHERE sid = ?`, s.ts(seen[sid]), sid); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetSoulVersion sets the soul's version.
func (s *Store) SetSoulVersion(ctx context.Context, sid, version string) error {
	return s.updateSoul(ctx, "setting soul version", sid, `UPDATE souls SET version = ? WHERE sid = ?`, version, sid)
}

// MarkKeeperSoulsDisconnected marks the connected souls held by keeperID
// disconnected.
func (s *Store) MarkKeeperSoulsDisconnected(ctx context.Context, keeperID string) error {
	_, err := s.write(ctx, `UPDATE souls SET status = ?, keeper_id = '' WHERE keeper_id = ? AND status = ?`,
		store.SoulDisconnected, keeperID, store.SoulConnected)
	return s.wrap("disconnecting souls of keeper "+keeperID, err)
}

// CreateJoinToken stores a join token; conflict when the id or secret hash
// is taken, invalid for a negative MaxUses.
func (s *Store) CreateJoinToken(ctx context.Context, t store.JoinToken) error {
	if t.MaxUses < 0 {
		return s.wrap("creating join token", invalid("max uses must not be negative, got %d", t.MaxUses))
	}
	_, err := s.write(ctx, `INSERT INTO join_tokens (id, secret_hash, covens, expires_at, created_by, created_at, uses, max_uses, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.SecretHash, strList(sortedSet(t.Covens)), s.ts(t.ExpiresAt), t.CreatedBy, s.ts(s.orNow(t.CreatedAt)), t.Uses,
		t.MaxUses, s.tsPtr(t.RevokedAt))
	return s.wrap("creating join token", err)
}

const joinTokenCols = `id, covens, expires_at, created_by, created_at, uses, max_uses, revoked_at`

func scanJoinToken(sc interface{ Scan(...any) error }, extra ...any) (store.JoinToken, error) {
	var t store.JoinToken
	dest := append([]any{&t.ID, listCol{&t.Covens}, timeCol{&t.ExpiresAt}, &t.CreatedBy, timeCol{&t.CreatedAt},
		&t.Uses, &t.MaxUses, nullTimeCol{&t.RevokedAt}}, extra...)
	err := sc.Scan(dest...)
	return t, err
}

// UseJoinToken counts a use of the usable token with secretHash and
// returns it (Uses included). One conditional UPDATE checks expiry,
// revocation and the use limit and counts the use: PostgreSQL re-checks
// the condition after waiting for a concurrent use's row lock, and SQLite
// has one writer, so concurrent uses never exceed MaxUses.
func (s *Store) UseJoinToken(ctx context.Context, secretHash []byte, now time.Time) (store.JoinToken, error) {
	var hash []byte
	t, err := scanJoinToken(q{s: s, db: s.w}.row(ctx, `UPDATE join_tokens SET uses = uses + 1
		WHERE secret_hash = ? AND expires_at > ? AND revoked_at IS NULL AND (max_uses = 0 OR uses < max_uses)
		RETURNING `+joinTokenCols+`, secret_hash`, secretHash, s.ts(now)), &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return store.JoinToken{}, s.joinTokenRefusal(ctx, secretHash, now)
	}
	t.SecretHash = hash
	return t, s.wrap("using join token", err)
}

// PeekJoinToken returns the token a use at now would count, without
// counting it (and without its secret hash).
func (s *Store) PeekJoinToken(ctx context.Context, secretHash []byte, now time.Time) (store.JoinToken, error) {
	t, err := scanJoinToken(s.reader().row(ctx, `SELECT `+joinTokenCols+` FROM join_tokens
		WHERE secret_hash = ? AND expires_at > ? AND revoked_at IS NULL AND (max_uses = 0 OR uses < max_uses)`, secretHash, s.ts(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.JoinToken{}, s.joinTokenRefusal(ctx, secretHash, now)
	}
	return t, s.wrap("reading join token", err)
}

// joinTokenRefusal is the not-found error for a token with secretHash
// that cannot be used at now, saying why: unknown, revoked, expired or
// used up (an install that failed on a used-up token is another story
// than one on an expired token).
func (s *Store) joinTokenRefusal(ctx context.Context, secretHash []byte, now time.Time) error {
	t, err := scanJoinToken(s.reader().row(ctx, `SELECT `+joinTokenCols+` FROM join_tokens WHERE secret_hash = ?`, secretHash))
	var msg string
	switch {
	case errors.Is(err, sql.ErrNoRows):
		msg = "join token unknown to this keeper"
	case err != nil:
		return s.wrap("reading join token", err)
	case t.RevokedAt != nil:
		msg = "join token revoked at " + t.RevokedAt.UTC().Format(time.RFC3339)
	case !now.Before(t.ExpiresAt):
		msg = "join token expired at " + t.ExpiresAt.UTC().Format(time.RFC3339)
	case t.MaxUses > 0 && t.Uses >= t.MaxUses:
		msg = fmt.Sprintf("join token used up (%d of %d uses)", t.Uses, t.MaxUses)
	default:
		// Usable again by now (a concurrent revocation lost, or clocks):
		// say it was refused all the same.
		msg = "join token not usable at " + now.UTC().Format(time.RFC3339)
	}
	return &domain.Error{Code: domain.CodeNotFound, Message: msg, Err: domain.ErrNotFound}
}

// ListJoinTokens returns every join token, oldest first, without secret
// hashes.
func (s *Store) ListJoinTokens(ctx context.Context) ([]store.JoinToken, error) {
	rows, err := s.reader().query(ctx, `SELECT `+joinTokenCols+` FROM join_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, s.wrap("listing join tokens", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.JoinToken, error) { return scanJoinToken(sc) })
	return out, s.wrap("listing join tokens", err)
}

// RevokeJoinToken marks the join token revoked at at; revoking twice keeps
// the first time.
func (s *Store) RevokeJoinToken(ctx context.Context, id string, at time.Time) error {
	n, err := s.write(ctx, `UPDATE join_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, s.ts(at), id)
	if err != nil {
		return s.wrap("revoking join token", err)
	}
	if n == 0 {
		return notFound("join token", id)
	}
	return nil
}
