// Package auth authenticates and authorises Archons, the operator
// identities of Soul Stack, and writes the audit log.
//
// Archons hold a Role (see Role for the matrix). They authenticate with
// EdDSA (Ed25519) JWTs signed by the Keeper: the token carries the archon id
// (sub), its role, a token id (jti) and an expiry. Every issued token has a
// store.Token record under its jti, so a token can be revoked before it
// expires; Authenticate refuses tokens whose record is missing or revoked,
// and every token of a disabled Archon. The role that counts is the
// Archon's as stored, read with the token record on every request: the
// claim only records what it was at issue.
// The signing key is created once by Init and kept in the store's settings,
// so every Keeper sharing a database verifies the same tokens.
package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// SettingSigningKey is the store setting holding the Ed25519 private key
// (its 32-byte seed) that signs Archon tokens.
const SettingSigningKey = "auth.signing_key"

// Issuer is the iss claim of every token the Keeper signs.
const Issuer = "soulstack-keeper"

// DefaultTokenTTL is the lifetime of a token when none is asked for.
const DefaultTokenTTL = 30 * 24 * time.Hour

// Authority issues, verifies and revokes Archon tokens, manages Archons and
// appends audit entries. It is safe for concurrent use.
type Authority struct {
	st  store.Store
	key ed25519.PrivateKey
	pub ed25519.PublicKey
	now func() time.Time
}

// Option configures an Authority.
type Option func(*Authority)

// WithClock replaces time.Now (tests of expiry).
func WithClock(now func() time.Time) Option { return func(a *Authority) { a.now = now } }

// Init creates the signing key in st. It fails with CodeConflict when a key
// already exists: a Keeper is initialized once.
func Init(ctx context.Context, st store.Store) error {
	_, err := st.GetSetting(ctx, SettingSigningKey)
	switch {
	case err == nil:
		return domain.Errorf(domain.CodeConflict, "the signing key already exists: this keeper is already initialized")
	case domain.ErrorCode(err) != domain.CodeNotFound:
		return fmt.Errorf("reading signing key: %w", err)
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return fmt.Errorf("generating signing key: %w", err)
	}
	if err := st.PutSetting(ctx, SettingSigningKey, seed); err != nil {
		return fmt.Errorf("storing signing key: %w", err)
	}
	return nil
}

// Initialized reports whether Init has run on st.
func Initialized(ctx context.Context, st store.Store) (bool, error) {
	_, err := st.GetSetting(ctx, SettingSigningKey)
	switch {
	case err == nil:
		return true, nil
	case domain.ErrorCode(err) == domain.CodeNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("reading signing key: %w", err)
	}
}

// New loads the signing key from st. It fails with a clear message when the
// keeper was never initialized.
func New(ctx context.Context, st store.Store, opts ...Option) (*Authority, error) {
	seed, err := st.GetSetting(ctx, SettingSigningKey)
	if err != nil {
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return nil, &domain.Error{Code: domain.CodeUnavailable, Message: "no signing key in the store: run `keeper init` first", Err: err}
		}
		return nil, fmt.Errorf("reading signing key: %w", err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing key setting %s has %d bytes, want %d", SettingSigningKey, len(seed), ed25519.SeedSize)
	}
	key := ed25519.NewKeyFromSeed(seed)
	a := &Authority{st: st, key: key, pub: key.Public().(ed25519.PublicKey), now: time.Now}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Principal is an authenticated Archon as seen by one request.
type Principal struct {
	ArchonID  string    `json:"archon_id"`
	Role      Role      `json:"role"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (set by the API for each request).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal of the request ctx belongs to.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// unauthorized builds the 401 error; the cause is kept for logs only.
func unauthorized(msg string, cause error) error {
	return &domain.Error{Code: domain.CodeUnauthorized, Message: msg, Err: cause}
}

// storeErr keeps an unavailable store a 503 and turns a missing record into
// the given 401 message.
func storeErr(err error, missing string) error {
	if errors.Is(err, domain.ErrNotFound) || domain.ErrorCode(err) == domain.CodeNotFound {
		return unauthorized(missing, nil)
	}
	return err
}
