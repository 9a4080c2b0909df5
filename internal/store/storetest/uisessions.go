package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// testUISessions: a session is found by its id's hash only, touched
// forward only, revoked once (the first time kept), and dropped a day
// after it ended when a new one is created.
func testUISessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	must(t, s.CreateToken(ctx, store.Token{ID: "t1", ArchonID: "a1", ExpiresAt: at(48 * time.Hour), CreatedAt: base}))

	wantNotFound(t, s.CreateUISession(ctx, store.UISession{IDHash: []byte("h0"), ArchonID: "a1", TokenID: "nope", CreatedAt: base, ExpiresAt: at(time.Hour)}))
	one := store.UISession{IDHash: []byte("hash-one"), ArchonID: "a1", TokenID: "t1", CreatedAt: base, ExpiresAt: at(12 * time.Hour), LastSeenAt: base}
	must(t, s.CreateUISession(ctx, one))
	wantConflict(t, s.CreateUISession(ctx, one))
	got, err := s.GetUISession(ctx, []byte("hash-one"))
	must(t, err)
	diff(t, "GetUISession", got, one)
	_, err = s.GetUISession(ctx, []byte("hash-two"))
	wantNotFound(t, err)

	must(t, s.TouchUISession(ctx, one.IDHash, at(time.Minute)))
	must(t, s.TouchUISession(ctx, one.IDHash, at(30*time.Second))) // never backwards
	got, err = s.GetUISession(ctx, one.IDHash)
	must(t, err)
	if !got.LastSeenAt.Equal(at(time.Minute)) {
		t.Fatalf("LastSeenAt = %v, want %v", got.LastSeenAt, at(time.Minute))
	}

	must(t, s.RevokeUISession(ctx, one.IDHash, at(2*time.Minute)))
	must(t, s.RevokeUISession(ctx, one.IDHash, at(3*time.Minute)))
	must(t, s.RevokeUISession(ctx, []byte("unknown"), at(3*time.Minute)))
	got, err = s.GetUISession(ctx, one.IDHash)
	must(t, err)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(at(2*time.Minute)) {
		t.Fatalf("RevokedAt = %v, want the first revocation %v", got.RevokedAt, at(2*time.Minute))
	}

	// Two days on, a new session sweeps the ended one away; a live one
	// stays.
	live := store.UISession{IDHash: []byte("hash-live"), ArchonID: "a1", TokenID: "t1", CreatedAt: at(time.Hour), ExpiresAt: at(47 * time.Hour), LastSeenAt: at(time.Hour)}
	must(t, s.CreateUISession(ctx, live))
	must(t, s.CreateUISession(ctx, store.UISession{IDHash: []byte("hash-late"), ArchonID: "a1", TokenID: "t1", CreatedAt: at(46 * time.Hour), ExpiresAt: at(47 * time.Hour)}))
	_, err = s.GetUISession(ctx, one.IDHash)
	wantNotFound(t, err)
	_, err = s.GetUISession(ctx, live.IDHash)
	must(t, err)
	late, err := s.GetUISession(ctx, []byte("hash-late"))
	must(t, err)
	if !late.LastSeenAt.Equal(at(46 * time.Hour)) {
		t.Fatalf("a zero LastSeenAt is not CreatedAt: %v", late.LastSeenAt)
	}
}
