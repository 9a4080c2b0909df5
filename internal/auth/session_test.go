package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// wantSessionRefused fails unless err is a 401 whose message holds msg.
func wantSessionRefused(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if domain.ErrorCode(err) != domain.CodeUnauthorized || !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: %v, want 401 %q", what, err, msg)
	}
}

// A UI session (issue 31) lives until logout, its own expiry (never past
// its token's), or an idle timeout; its token's revocation, its Archon's
// disabling and role changes count on every request; its id is no token.
func TestUISessionLifecycle(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Now().UTC()
	a := newAuthority(t, st, auth.WithClock(func() time.Time { return now }))
	admin, tok, err := a.Bootstrap(ctx, "admin", 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	lim := auth.SessionLimits{TTL: 4 * time.Hour, Idle: 30 * time.Minute}

	if _, err := a.StartSession(ctx, "not-a-token", lim); domain.ErrorCode(err) != domain.CodeUnauthorized {
		t.Fatalf("StartSession with a bad token: %v, want 401", err)
	}
	s, err := a.StartSession(ctx, tok.Token, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ID) < 40 || s.ID == tok.Token || !s.ExpiresAt.Equal(now.Add(4*time.Hour)) {
		t.Fatalf("session %q expiring %v: want a fresh random id living 4h", s.ID, s.ExpiresAt)
	}
	_, err = a.Authenticate(ctx, s.ID)
	wantSessionRefused(t, "the session id as a bearer token", err, "invalid token")

	// Activity keeps it alive past the idle timeout in total.
	for range 3 {
		now = now.Add(20 * time.Minute)
		p, err := a.AuthenticateSession(ctx, s.ID, lim)
		if err != nil {
			t.Fatalf("active session after %v: %v", now.Sub(s.ExpiresAt.Add(-4*time.Hour)), err)
		}
		if p.ArchonID != admin.ID || p.Role != auth.RoleAdmin || p.TokenID != tok.ID {
			t.Fatalf("principal %+v", p)
		}
	}
	// Idle too long: ended for good, even if activity resumes.
	now = now.Add(31 * time.Minute)
	_, err = a.AuthenticateSession(ctx, s.ID, lim)
	wantSessionRefused(t, "idle session", err, "session idle too long")
	_, err = a.AuthenticateSession(ctx, s.ID, auth.SessionLimits{TTL: lim.TTL, Idle: 24 * time.Hour})
	wantSessionRefused(t, "idle session, asked again", err, "session ended")

	// Expiry: the session's own, never past its token's.
	s2, err := a.StartSession(ctx, tok.Token, lim)
	if err != nil {
		t.Fatal(err)
	}
	for range 11 {
		now = now.Add(20 * time.Minute)
		if _, err := a.AuthenticateSession(ctx, s2.ID, lim); err != nil {
			t.Fatalf("active session: %v", err)
		}
	}
	now = now.Add(20*time.Minute - time.Second)
	if _, err := a.AuthenticateSession(ctx, s2.ID, lim); err != nil {
		t.Fatalf("active session a second before its expiry: %v", err)
	}
	now = now.Add(time.Second)
	_, err = a.AuthenticateSession(ctx, s2.ID, lim)
	wantSessionRefused(t, "session past its TTL", err, "session expired")
	short, err := a.IssueToken(ctx, admin, time.Hour, "short")
	if err != nil {
		t.Fatal(err)
	}
	s3, err := a.StartSession(ctx, short.Token, auth.SessionLimits{TTL: 12 * time.Hour, Idle: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !s3.ExpiresAt.Equal(short.ExpiresAt) {
		t.Fatalf("session of a 1h token expires %v, want the token's %v", s3.ExpiresAt, short.ExpiresAt)
	}

	// Logout (EndSession) ends it; unknown ids are refused.
	s4, err := a.StartSession(ctx, tok.Token, lim)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.EndSession(ctx, s4.ID); err != nil {
		t.Fatal(err)
	}
	_, err = a.AuthenticateSession(ctx, s4.ID, lim)
	wantSessionRefused(t, "ended session", err, "session ended")
	_, err = a.AuthenticateSession(ctx, s4.ID+"x", lim)
	wantSessionRefused(t, "unknown session", err, "session unknown")

	// Revoking the token ends its sessions.
	s5, err := a.StartSession(ctx, tok.Token, lim)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, tok.ID, now); err != nil {
		t.Fatal(err)
	}
	_, err = a.AuthenticateSession(ctx, s5.ID, lim)
	wantSessionRefused(t, "session of a revoked token", err, "token revoked")
}
