package auth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

func newStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// keyFiles remembers the key file of each store newAuthority initialized.
var keyFiles sync.Map

func newAuthority(t *testing.T, st store.Store, opts ...auth.Option) *auth.Authority {
	t.Helper()
	ctx := context.Background()
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	keyFiles.Store(st, keyFile)
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func wantCode(t *testing.T, err error, want domain.Code) {
	t.Helper()
	if got := domain.ErrorCode(err); got != want || err == nil {
		t.Fatalf("error %v: code %s, want %s", err, got, want)
	}
}

func TestInitOnce(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if _, err := auth.New(ctx, st, keyFile); err == nil || !strings.Contains(err.Error(), "keeper init") {
		t.Fatalf("New before Init: %v, want a hint to run keeper init", err)
	}
	if ok, err := auth.Initialized(ctx, st, keyFile); err != nil || ok {
		t.Fatalf("Initialized before Init = %v, %v", ok, err)
	}
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	wantCode(t, auth.Init(ctx, st, keyFile), domain.CodeConflict)
	if ok, err := auth.Initialized(ctx, st, keyFile); err != nil || !ok {
		t.Fatalf("Initialized after Init = %v, %v", ok, err)
	}
}

func TestTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Now()
	clock := func() time.Time { return now }
	a := newAuthority(t, st, auth.WithClock(func() time.Time { return clock() }))

	admin, tok, err := a.Bootstrap(ctx, "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Bootstrap(ctx, "again", time.Hour); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("second Bootstrap: %v, want conflict", err)
	}
	p, err := a.Authenticate(ctx, "Bearer "+tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Principal{ArchonID: admin.ID, Role: auth.RoleAdmin, TokenID: tok.ID, ExpiresAt: tok.ExpiresAt}
	if diff := cmp.Diff(want, p, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Fatalf("principal (-want +got):\n%s", diff)
	}

	viewer, err := a.CreateArchon(ctx, "vera", auth.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	vt, err := a.IssueToken(ctx, viewer, 0, "ci")
	if err != nil {
		t.Fatal(err)
	}
	vp, err := a.Authenticate(ctx, vt.Token)
	if err != nil || vp.Role != auth.RoleViewer {
		t.Fatalf("viewer token: %+v, %v", vp, err)
	}

	// A viewer cannot revoke the admin's token (and does not learn it exists).
	wantCode(t, a.RevokeToken(ctx, vp, tok.ID), domain.CodeNotFound)
	// An admin revokes the viewer's token; revoking again is a no-op.
	if err := a.RevokeToken(ctx, p, vt.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeToken(ctx, p, vt.ID); err != nil {
		t.Fatal(err)
	}
	_, err = a.Authenticate(ctx, vt.Token)
	wantCode(t, err, domain.CodeUnauthorized)

	// Expiry.
	now = now.Add(2 * time.Hour)
	_, err = a.Authenticate(ctx, tok.Token)
	wantCode(t, err, domain.CodeUnauthorized)
	if !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token error %q does not say so", err)
	}
}

// TestDisabledArchon: disabling an Archon refuses all its tokens at once
// ("archon disabled"), including tokens it minted itself, and revokes them
// (SPEC §10.2): enabling it again does not bring them back. The last
// enabled admin stays.
func TestDisabledArchon(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	a := newAuthority(t, st)
	admin, adminTok, err := a.Bootstrap(ctx, "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	olga, err := a.CreateArchon(ctx, "olga", auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.IssueToken(ctx, olga, time.Hour, "first")
	if err != nil {
		t.Fatal(err)
	}
	minted, err := a.IssueToken(ctx, olga, time.Hour, "minted by a leaked token")
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.DisableArchon(ctx, olga.ID)
	if err != nil || got.DisabledAt == nil {
		t.Fatalf("DisableArchon = %+v, %v", got, err)
	}
	for _, tok := range []auth.Issued{first, minted} {
		_, err := a.Authenticate(ctx, tok.Token)
		wantCode(t, err, domain.CodeUnauthorized)
		if !strings.Contains(err.Error(), "archon disabled") {
			t.Fatalf("a disabled archon's token: %v, want it to say archon disabled", err)
		}
	}
	// A token issued while disabled is refused too.
	later, err := a.IssueToken(ctx, got, time.Hour, "later")
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Authenticate(ctx, later.Token)
	wantCode(t, err, domain.CodeUnauthorized)

	// The last enabled admin cannot be disabled; its token keeps working.
	_, err = a.DisableArchon(ctx, admin.ID)
	wantCode(t, err, domain.CodeConflict)
	if _, err := a.Authenticate(ctx, adminTok.Token); err != nil {
		t.Fatal(err)
	}
	_, err = a.DisableArchon(ctx, "nobody")
	wantCode(t, err, domain.CodeNotFound)

	if got, err = a.EnableArchon(ctx, olga.ID); err != nil || got.DisabledAt != nil {
		t.Fatalf("EnableArchon = %+v, %v", got, err)
	}
	for _, tok := range []auth.Issued{first, minted} {
		_, err := a.Authenticate(ctx, tok.Token)
		wantCode(t, err, domain.CodeUnauthorized)
		if !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("a token of a disabled (now enabled) archon: %v, want it revoked", err)
		}
	}
	fresh, err := a.IssueToken(ctx, got, time.Hour, "after enabling")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.Authenticate(ctx, fresh.Token); err != nil || p.Role != auth.RoleOperator {
		t.Fatalf("new token after enabling: %+v, %v", p, err)
	}
}

// TestRoleFromStore: the role is the Archon's as stored, not the token's
// claim — a token claiming admin for a viewer authenticates as a viewer.
func TestRoleFromStore(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	a := newAuthority(t, st)
	vera, err := a.CreateArchon(ctx, "vera", auth.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	key := signingKey(t, st)
	now := time.Now().UTC().Truncate(time.Second)
	if err := st.CreateToken(ctx, store.Token{ID: "t-claim", ArchonID: vera.ID, ExpiresAt: now.Add(time.Hour), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": auth.Issuer, "sub": vera.ID, "jti": "t-claim", "role": "admin",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(ctx, signed)
	if err != nil || p.Role != auth.RoleViewer {
		t.Fatalf("a viewer's token claiming admin: %+v, %v; want role viewer", p, err)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	a := newAuthority(t, st)
	_, tok, err := a.Bootstrap(ctx, "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A token signed by another keeper's key.
	other := newAuthority(t, newStore(t))
	_, foreign, err := other.Bootstrap(ctx, "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok.Token, ".")
	for name, bearer := range map[string]string{
		"empty":          "",
		"bearer only":    "Bearer ",
		"garbage":        "Bearer not.a.jwt",
		"foreign key":    foreign.Token,
		"bad signature":  parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])),
		"alg none":       "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + ".",
		"tampered claim": parts[0] + ".eyJyb2xlIjoiYWRtaW4ifQ." + parts[2],
	} {
		t.Run(name, func(t *testing.T) {
			_, err := a.Authenticate(ctx, bearer)
			wantCode(t, err, domain.CodeUnauthorized)
		})
	}
}

func TestRoles(t *testing.T) {
	for _, tc := range []struct {
		have, need auth.Role
		ok         bool
	}{
		{auth.RoleAdmin, auth.RoleAdmin, true},
		{auth.RoleAdmin, auth.RoleViewer, true},
		{auth.RoleOperator, auth.RoleOperator, true},
		{auth.RoleOperator, auth.RoleAdmin, false},
		{auth.RoleViewer, auth.RoleOperator, false},
		{auth.RoleViewer, auth.RoleViewer, true},
		{"root", auth.RoleViewer, false},
	} {
		if got := tc.have.Allows(tc.need); got != tc.ok {
			t.Errorf("%s.Allows(%s) = %v, want %v", tc.have, tc.need, got, tc.ok)
		}
	}
	if _, err := auth.ParseRole("superuser"); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("ParseRole(superuser): %v", err)
	}
	wantCode(t, auth.Require(auth.Principal{Role: auth.RoleViewer}, auth.RoleAdmin), domain.CodeForbidden)
}

func TestCreateArchonValidation(t *testing.T) {
	ctx := context.Background()
	a := newAuthority(t, newStore(t))
	if _, err := a.CreateArchon(ctx, "ops", auth.RoleOperator); err != nil {
		t.Fatal(err)
	}
	_, err := a.CreateArchon(ctx, "ops", auth.RoleViewer)
	wantCode(t, err, domain.CodeConflict)
	_, err = a.CreateArchon(ctx, "bad name!", auth.RoleViewer)
	wantCode(t, err, domain.CodeInvalid)
	_, err = a.CreateArchon(ctx, "x", "root")
	wantCode(t, err, domain.CodeInvalid)
}

func TestMask(t *testing.T) {
	in := map[string]any{
		"name":       "web",
		"password":   "hunter2",
		"join_token": "SSJ1.abc",
		"nested":     map[string]any{"client_secret": "s", "keep": 1, "list": []any{map[string]any{"Token": "t"}}},
		"git":        "https://bob:pw@git.example.com/x.git",
		"plain_url":  "https://git.example.com/x.git",
	}
	want := map[string]any{
		"name":       "web",
		"password":   auth.Masked,
		"join_token": auth.Masked,
		"nested":     map[string]any{"client_secret": auth.Masked, "keep": 1, "list": []any{map[string]any{"Token": auth.Masked}}},
		"git":        "https://bob:****@git.example.com/x.git",
		"plain_url":  "https://git.example.com/x.git",
	}
	if diff := cmp.Diff(want, auth.MaskMap(in)); diff != "" {
		t.Fatalf("Mask (-want +got):\n%s", diff)
	}
	if in["password"] != "hunter2" {
		t.Fatal("Mask modified its input")
	}
}

// signingKey reads the key newAuthority put in st's key file, as an
// attacker holding the file (not the database) would.
func signingKey(t *testing.T, st store.Store) ed25519.PrivateKey {
	t.Helper()
	path, ok := keyFiles.Load(st)
	if !ok {
		t.Fatal("no key file for this store")
	}
	b, err := os.ReadFile(path.(string))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("key file %s holds no PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}
