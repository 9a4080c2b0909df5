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
// The signing key is created once by Init in a key file (0600, outside the
// database: read access to the store must not mint tokens); Keepers
// sharing a database share that file.
package auth

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

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

// New loads the signing key from keyFile, first moving a key an older
// version left in the store into it (see SettingSigningKey). It fails with
// a clear message when the keeper was never initialized.
func New(ctx context.Context, st store.Store, keyFile string, opts ...Option) (*Authority, error) {
	if keyFile == "" {
		return nil, domain.Errorf(domain.CodeInvalid, "no signing key file given (auth.signing_key_file)")
	}
	if _, err := migrateKey(ctx, st, keyFile); err != nil {
		return nil, err
	}
	key, err := readKeyFile(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &domain.Error{Code: domain.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"no signing key file at %s: run `keeper init` first; a keeper sharing a database with others needs a copy of their key file (auth.signing_key_file)", keyFile)}
	}
	if err != nil {
		return nil, err
	}
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
	// Via is the Archon the call came through when it acts on behalf of
	// ArchonID (the Checker's): a permission holds only when it holds for
	// both.
	Via string `json:"via,omitempty"`
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
