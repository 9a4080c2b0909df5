package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// claims are the JWT claims of an Archon token: sub = archon id, jti =
// token id, plus the role.
type claims struct {
	Role string `json:"role"`
	jwt.RegisteredClaims
}

// Issued is a freshly signed token. Token is shown once and never stored.
type Issued struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// IssueToken signs a token for archon valid for ttl (DefaultTokenTTL when
// ttl is 0) and records it so it can be revoked. A disabled Archon's token
// is issued but refused until the Archon is enabled (the keeper reissues
// the Checker's token at every start, whatever its Archon's state).
func (a *Authority) IssueToken(ctx context.Context, archon store.Archon, ttl time.Duration, description string) (Issued, error) {
	return a.issue(ctx, archon, ttl, description, "")
}

// Mint issues a token for archon on the request of p's token (POST
// /v1/tokens). SPEC §10.2, audit L8: a token mints only tokens of its
// Archon's role or lower, lasting no longer than its own remaining
// lifetime (ttl 0: DefaultTokenTTL, or that remaining lifetime if
// shorter), and the new token records p's token as its parent, so
// revoking p's token revokes it too.
func (a *Authority) Mint(ctx context.Context, p Principal, archon store.Archon, ttl time.Duration, description string) (Issued, error) {
	if !p.Role.Allows(Role(archon.Role)) {
		return Issued{}, domain.Errorf(domain.CodeForbidden, "a %s token cannot mint a token for archon %s, whose role %s is higher", p.Role, archon.Name, archon.Role)
	}
	ttl, err := a.Bounded(p, ttl)
	if err != nil {
		return Issued{}, err
	}
	return a.issue(ctx, archon, ttl, description, p.TokenID)
}

// Bounded checks a requested token lifetime against p's token: ttl 0
// becomes DefaultTokenTTL, capped at what p's token has left; a longer ttl
// than that is refused (CodeInvalid).
func (a *Authority) Bounded(p Principal, ttl time.Duration) (time.Duration, error) {
	if ttl < 0 {
		return 0, domain.Errorf(domain.CodeInvalid, "ttl must be positive")
	}
	if p.ExpiresAt.IsZero() { // not a token's request (keeper init, tests)
		return ttl, nil
	}
	left := p.ExpiresAt.Sub(a.now()).Truncate(time.Second)
	if left < time.Second {
		return 0, unauthorized("token expired", nil)
	}
	switch {
	case ttl == 0:
		return min(DefaultTokenTTL, left), nil
	case ttl > left:
		return 0, domain.Errorf(domain.CodeInvalid,
			"ttl %s is longer than the remaining lifetime of the token asking for it (%s, until %s): a token cannot mint a longer-lived one; ask for at most %s",
			ttl, left, p.ExpiresAt.UTC().Format(time.RFC3339), left)
	}
	return ttl, nil
}

// issue signs and records a token; parent is the minting token's id ("" for
// tokens the keeper issues itself).
func (a *Authority) issue(ctx context.Context, archon store.Archon, ttl time.Duration, description, parent string) (Issued, error) {
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < 0 {
		return Issued{}, domain.Errorf(domain.CodeInvalid, "ttl must be positive")
	}
	role, err := ParseRole(archon.Role)
	if err != nil {
		return Issued{}, err
	}
	exact := a.now().UTC()
	now := exact.Truncate(time.Second) // JWT times are whole seconds
	rec := store.Token{
		ID:          uuid.NewString(),
		ArchonID:    archon.ID,
		Description: description,
		ExpiresAt:   now.Add(ttl),
		CreatedAt:   exact, // orders the token list, also within a second
		ParentID:    parent,
	}
	c := claims{
		Role: string(role),
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   archon.ID,
			ID:        rec.ID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(rec.ExpiresAt),
		},
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(a.key)
	if err != nil {
		return Issued{}, fmt.Errorf("signing token: %w", err)
	}
	if err := a.st.CreateToken(ctx, rec); err != nil {
		return Issued{}, fmt.Errorf("recording token: %w", err)
	}
	return Issued{ID: rec.ID, Token: signed, ExpiresAt: rec.ExpiresAt}, nil
}

// Authenticate verifies a bearer token (with or without the "Bearer "
// prefix) and returns its Principal. Missing, malformed, badly signed,
// expired, unknown and revoked tokens, and tokens of a disabled Archon, are
// CodeUnauthorized; a store that cannot be reached is CodeUnavailable.
//
// The role is the Archon's as stored now, not the one signed into the
// token when it was issued: disabling an Archon or changing its role takes
// effect on its next request. Likewise the stored record's expiry and
// revocation win over the JWT's claims (SPEC §10.2, audit M6): a JWT whose
// exp outlives its record is refused once the record expires. Token and
// Archon are one store read.
func (a *Authority) Authenticate(ctx context.Context, bearer string) (Principal, error) {
	raw := strings.TrimSpace(bearer)
	if len(raw) >= 7 && strings.EqualFold(raw[:7], "bearer ") {
		raw = strings.TrimSpace(raw[7:])
	}
	if raw == "" {
		return Principal{}, unauthorized("missing bearer token: send Authorization: Bearer <token>", nil)
	}
	var c claims
	_, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return a.pub, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(a.now),
		jwt.WithLeeway(5*time.Second),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Principal{}, unauthorized("token expired", err)
	case err != nil:
		return Principal{}, unauthorized("invalid token", err)
	case c.ID == "" || c.Subject == "":
		return Principal{}, unauthorized("invalid token: no id or subject", nil)
	}
	return a.tokenPrincipal(ctx, c.ID, c.Subject)
}

// tokenPrincipal is the Principal of token id, held by archon, as its
// stored record and Archon say now.
func (a *Authority) tokenPrincipal(ctx context.Context, id, archon string) (Principal, error) {
	rec, ar, err := a.st.GetTokenArchon(ctx, id)
	if err != nil {
		return Principal{}, storeErr(err, "unknown token")
	}
	if rec.ArchonID != archon {
		return Principal{}, unauthorized("invalid token: subject mismatch", nil)
	}
	if ar.DisabledAt != nil {
		return Principal{}, unauthorized("archon disabled", nil)
	}
	if rec.RevokedAt != nil {
		return Principal{}, unauthorized("token revoked", nil)
	}
	if !a.now().Before(rec.ExpiresAt) {
		return Principal{}, unauthorized("token expired", nil)
	}
	role, err := ParseRole(ar.Role)
	if err != nil {
		return Principal{}, unauthorized("archon has an unknown role", err)
	}
	return Principal{ArchonID: archon, Role: role, TokenID: id, ExpiresAt: rec.ExpiresAt}, nil
}

// Tokens lists token records, oldest first: the call of an Archon with
// manage_access on the keeper lists every
// Archon's (or archonID's, when given), anyone else's only its own —
// asking for another Archon's is forbidden.
func (a *Authority) Tokens(ctx context.Context, p Principal, archonID string) ([]store.Token, error) {
	if !a.May(ctx, p, PermManageAccess) {
		if archonID != "" && archonID != p.ArchonID {
			return nil, a.Authorize(ctx, p, PermManageAccess)
		}
		archonID = p.ArchonID
	}
	ts, err := a.st.ListTokens(ctx, archonID)
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", err)
	}
	return ts, nil
}

// RevokeToken revokes token id and every token minted from it. Admins may
// revoke any token, others only their own; a token of another archon is
// reported as not found so its existence does not leak. Revoking a revoked
// token is a no-op.
func (a *Authority) RevokeToken(ctx context.Context, p Principal, id string) error {
	t, err := a.st.GetToken(ctx, id)
	if err != nil {
		return fmt.Errorf("token %s: %w", id, err)
	}
	if t.ArchonID != p.ArchonID && !a.May(ctx, p, PermManageAccess) {
		return &domain.Error{Code: domain.CodeNotFound, Message: fmt.Sprintf("token %s not found", id)}
	}
	if t.RevokedAt != nil {
		return nil
	}
	if err := a.st.RevokeToken(ctx, id, a.now().UTC()); err != nil {
		return fmt.Errorf("revoking token %s: %w", id, err)
	}
	return nil
}
