package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Web UI sessions (SPEC §12, issue 31). The UI's cookie is not the
// Archon's token: signing in with a token opens a server-side session, and
// the cookie holds only its random id. The store keeps the id's SHA-256,
// never the id. A session acts through the token it was opened with (role,
// expiry, revocation and the Archon's state are read on every request) and
// ends at logout, at its own expiry, or when idle too long. A session id
// is not a token: Authenticate refuses it.

// DefaultSessionTTL is the longest a UI session lives (never past the
// expiry of the token it was opened with).
const DefaultSessionTTL = 12 * time.Hour

// DefaultSessionIdle is how long a UI session may go without a request.
const DefaultSessionIdle = time.Hour

// SessionLimits bound a UI session; zero fields take the defaults.
type SessionLimits struct {
	TTL  time.Duration
	Idle time.Duration
}

func (l SessionLimits) norm() SessionLimits {
	if l.TTL <= 0 {
		l.TTL = DefaultSessionTTL
	}
	if l.Idle <= 0 {
		l.Idle = DefaultSessionIdle
	}
	return l
}

// Session is an opened UI session. ID goes into the cookie and nowhere
// else.
type Session struct {
	ID        string
	Principal Principal
	ExpiresAt time.Time
}

// sessionHash is what the store keeps of a session id.
func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte("soulstack ui session v1\x00" + id))
	return h[:]
}

// StartSession authenticates bearer (an Archon token) and opens a UI
// session for it, living lim.TTL at most and never past the token's
// expiry.
func (a *Authority) StartSession(ctx context.Context, bearer string, lim SessionLimits) (Session, error) {
	p, err := a.Authenticate(ctx, bearer)
	if err != nil {
		return Session{}, err
	}
	lim = lim.norm()
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Session{}, fmt.Errorf("drawing a session id: %w", err)
	}
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	now := a.now().UTC()
	exp := now.Add(lim.TTL)
	if p.ExpiresAt.Before(exp) {
		exp = p.ExpiresAt
	}
	rec := store.UISession{IDHash: sessionHash(id), ArchonID: p.ArchonID, TokenID: p.TokenID,
		CreatedAt: now, ExpiresAt: exp, LastSeenAt: now}
	if err := a.st.CreateUISession(ctx, rec); err != nil {
		return Session{}, fmt.Errorf("opening ui session: %w", err)
	}
	p.ExpiresAt = exp
	return Session{ID: id, Principal: p, ExpiresAt: exp}, nil
}

// AuthenticateSession returns the Principal of the UI session id. Unknown,
// ended (logout), expired and idle sessions are CodeUnauthorized, and so
// is a session whose token was revoked or expired or whose Archon was
// disabled. An idle session is ended for good. ExpiresAt of the Principal
// is the session's own expiry.
func (a *Authority) AuthenticateSession(ctx context.Context, id string, lim SessionLimits) (Principal, error) {
	if id == "" {
		return Principal{}, unauthorized("not signed in", nil)
	}
	lim = lim.norm()
	h := sessionHash(id)
	s, err := a.st.GetUISession(ctx, h)
	if err != nil {
		return Principal{}, storeErr(err, "session unknown or ended")
	}
	now := a.now()
	switch {
	case s.RevokedAt != nil:
		return Principal{}, unauthorized("session ended", nil)
	case !now.Before(s.ExpiresAt):
		return Principal{}, unauthorized("session expired", nil)
	case now.Sub(s.LastSeenAt) > lim.Idle:
		if err := a.st.RevokeUISession(ctx, h, now.UTC()); err != nil {
			return Principal{}, err
		}
		return Principal{}, unauthorized("session idle too long", nil)
	}
	p, err := a.tokenPrincipal(ctx, s.TokenID, s.ArchonID)
	if err != nil {
		return Principal{}, err
	}
	if s.ExpiresAt.Before(p.ExpiresAt) {
		p.ExpiresAt = s.ExpiresAt
	}
	// Activity is written at most every touchEvery: a page and its live
	// fragments do not each cost a write.
	if touchEvery := min(lim.Idle/4, time.Minute); now.Sub(s.LastSeenAt) >= touchEvery {
		if err := a.st.TouchUISession(ctx, h, now.UTC()); err != nil {
			return Principal{}, err
		}
	}
	return p, nil
}

// EndSession ends the UI session id (logout): its cookie authenticates
// nothing from then on, on any keeper sharing the store. Ending an unknown
// or ended session is a no-op.
func (a *Authority) EndSession(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if err := a.st.RevokeUISession(ctx, sessionHash(id), a.now().UTC()); err != nil {
		return fmt.Errorf("ending ui session: %w", err)
	}
	return nil
}

type inProcessKey struct{}

// InProcess returns ctx marking a request the keeper makes to its own
// Operator API on behalf of p, whom the caller has already authenticated
// (the UI's actions, authenticated by their session). Only code in the
// keeper's process can set a context value: no request from the network
// carries it.
func InProcess(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, inProcessKey{}, p)
}

// InProcessPrincipal returns the Principal InProcess put in ctx.
func InProcessPrincipal(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(inProcessKey{}).(Principal)
	return p, ok
}
