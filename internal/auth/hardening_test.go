package auth_test

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// oldWayDatabase makes a database the way versions before the audit did:
// the signing key's seed in settings.auth.signing_key, no key file, and a
// token signed with that key. It returns the seed and the token.
func oldWayDatabase(t *testing.T, st store.Store) (ed25519.PrivateKey, string, store.Archon) {
	t.Helper()
	ctx := context.Background()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i*7 + 3)
	}
	if err := st.PutSetting(ctx, auth.SettingSigningKey, seed); err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	now := time.Now().UTC().Truncate(time.Second)
	ar := store.Archon{ID: "admin-id", Name: "admin", Role: store.RoleAdmin, CreatedAt: now}
	if err := st.CreateArchon(ctx, ar); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToken(ctx, store.Token{ID: "old-token", ArchonID: ar.ID, ExpiresAt: now.Add(time.Hour), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": auth.Issuer, "sub": ar.ID, "jti": "old-token", "role": "admin", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, tok, ar
}

// TestM6SigningKeyLeavesTheDatabase: audit M6 — a database made the old
// way (key in settings) is migrated by New: the key is written to the key
// file (0600), removed from the database, and the tokens it signed keep
// working. Reading the database afterwards yields no key to forge with.
func TestM6SigningKeyLeavesTheDatabase(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	key, oldTok, _ := oldWayDatabase(t, st)
	keyFile := filepath.Join(t.TempDir(), "data", "signing.key")
	if ok, err := auth.Initialized(ctx, st, keyFile); err != nil || !ok {
		t.Fatalf("Initialized on an old database = %v, %v; want true", ok, err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetSetting(ctx, auth.SettingSigningKey); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("signing key still in the database after New: %v", err)
	}
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	keyFiles.Store(st, keyFile)
	if !signingKey(t, st).Equal(key) {
		t.Fatal("the key file does not hold the database's old key")
	}
	if p, err := a.Authenticate(ctx, oldTok); err != nil || p.Role != auth.RoleAdmin {
		t.Fatalf("a token of the old database after migration: %+v, %v", p, err)
	}
	// A second keeper on the same database and key file starts as well.
	if _, err := auth.New(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	// Init refuses: the keeper is initialized.
	wantCode(t, auth.Init(ctx, st, keyFile), domain.CodeConflict)
}

// TestM6MigrationRefusesAnotherKey: a key file that differs from the key
// still in the database is an error, and the database keeps its key.
func TestM6MigrationRefusesAnotherKey(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	oldWayDatabase(t, st)
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	other := newStore(t)
	if err := auth.Init(ctx, other, keyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.New(ctx, st, keyFile); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("New with another key file: %v, want a refusal", err)
	}
	if _, err := st.GetSetting(ctx, auth.SettingSigningKey); err != nil {
		t.Fatalf("the database lost its key on a refused migration: %v", err)
	}
}

// TestM6KeyFileMode: a key file others can read is refused.
func TestM6KeyFileMode(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.New(ctx, st, keyFile); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("New with a world-readable key file: %v, want a refusal naming chmod 600", err)
	}
}

// TestM6StoredExpiryWins: audit M6 — a JWT signed with a 10-year exp for a
// token whose record expires in an hour stops working when the record
// expires, and the principal reports the record's expiry.
func TestM6StoredExpiryWins(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Now()
	a := newAuthority(t, st, auth.WithClock(func() time.Time { return now }))
	admin, tok, err := a.Bootstrap(ctx, "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": auth.Issuer, "sub": admin.ID, "jti": tok.ID, "role": "admin",
		"iat": now.Unix(), "exp": now.Add(10 * 365 * 24 * time.Hour).Unix(),
	}).SignedString(signingKey(t, st))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(ctx, forged)
	if err != nil {
		t.Fatal(err)
	}
	if !p.ExpiresAt.Equal(tok.ExpiresAt) {
		t.Fatalf("principal expires %v, want the record's %v", p.ExpiresAt, tok.ExpiresAt)
	}
	now = now.Add(2 * time.Hour)
	_, err = a.Authenticate(ctx, forged)
	wantCode(t, err, domain.CodeUnauthorized)
	if !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a 10-year JWT of an expired record: %v, want token expired", err)
	}
}

// TestL8MintBounds: audit L8 — a token mints only tokens no longer-lived
// than itself and of its role or lower; revoking it revokes what it
// minted, down the chain.
func TestL8MintBounds(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	a := newAuthority(t, st)
	_, adminTok, err := a.Bootstrap(ctx, "admin", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := a.CreateArchon(ctx, "olga", auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := a.Authenticate(ctx, adminTok.Token)
	if err != nil {
		t.Fatal(err)
	}
	opsTok, err := a.IssueToken(ctx, ops, time.Hour, "leaked 1-hour token")
	if err != nil {
		t.Fatal(err)
	}
	leaked, err := a.Authenticate(ctx, opsTok.Token)
	if err != nil {
		t.Fatal(err)
	}
	// The audit's laundering: a 1-hour token asks for 292 years.
	_, err = a.Mint(ctx, leaked, ops, 2562047*time.Hour, "laundered")
	wantCode(t, err, domain.CodeInvalid)
	_, err = a.Mint(ctx, leaked, ops, 2*time.Hour, "laundered")
	wantCode(t, err, domain.CodeInvalid)
	// ttl 0 is capped at what the parent has left.
	child, err := a.Mint(ctx, leaked, ops, 0, "default ttl")
	if err != nil {
		t.Fatal(err)
	}
	if child.ExpiresAt.After(leaked.ExpiresAt) {
		t.Fatalf("minted token expires %v, after its parent %v", child.ExpiresAt, leaked.ExpiresAt)
	}
	cp, err := a.Authenticate(ctx, child.Token)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := a.Mint(ctx, cp, ops, 30*time.Minute, "minted from the child")
	if err != nil {
		t.Fatal(err)
	}
	// An operator token cannot mint for an admin.
	admins, err := a.Archon(ctx, admin.ArchonID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Mint(ctx, leaked, admins, time.Minute, "escalation")
	wantCode(t, err, domain.CodeForbidden)

	// Revoking the leaked token revokes the whole chain it minted.
	if err := a.RevokeToken(ctx, leaked, opsTok.ID); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"child": child.Token, "grandchild": grandchild.Token} {
		_, err := a.Authenticate(ctx, tok)
		wantCode(t, err, domain.CodeUnauthorized)
		if !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("%s after its parent's revocation: %v", name, err)
		}
	}
	if _, err := a.Authenticate(ctx, adminTok.Token); err != nil {
		t.Fatalf("an unrelated token was revoked: %v", err)
	}
}
