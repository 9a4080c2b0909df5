package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
)

func (e *env) addSoul(sid, status string, covens ...string) {
	e.t.Helper()
	now := time.Now().UTC()
	if covens == nil {
		covens = []string{}
	}
	err := e.st.UpsertSoul(context.Background(), store.Soul{
		SID: sid, PublicKey: []byte("key-" + sid), Status: status, Covens: covens,
		Soulprint: map[string]any{"sid": sid, "os": map[string]any{"family": "debian"}}, LastSeen: now, CreatedAt: now,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestSouls(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.addSoul("h1", store.SoulPending)
	e.addSoul("h2", store.SoulConnected, "prod", "web")
	e.addSoul("h3", store.SoulDisconnected, "prod")
	admin, viewer := e.client(auth.RoleAdmin), e.client(auth.RoleViewer)

	all, err := viewer.ListSouls(ctx, apitypes.SoulQuery{})
	if err != nil || len(all) != 3 || all[0].SID != "h1" || all[1].Soulprint["sid"] != "h2" {
		t.Fatalf("souls %+v, %v", all, err)
	}
	prod, err := viewer.ListSouls(ctx, apitypes.SoulQuery{Covens: []string{"prod"}})
	if err != nil || len(prod) != 2 {
		t.Fatalf("prod souls %+v, %v", prod, err)
	}
	pending, err := viewer.ListSouls(ctx, apitypes.SoulQuery{Status: store.SoulPending})
	if err != nil || len(pending) != 1 || pending[0].SID != "h1" {
		t.Fatalf("pending souls %+v, %v", pending, err)
	}
	_, err = viewer.ListSouls(ctx, apitypes.SoulQuery{Status: "asleep"})
	wantAPI(t, err, http.StatusBadRequest, domain.CodeInvalid)
	_, err = viewer.GetSoul(ctx, "nope")
	wantAPI(t, err, http.StatusNotFound, domain.CodeNotFound)

	// Accept the pending soul into covens (deduplicated, sorted).
	s, err := admin.AcceptSoul(ctx, "h1", []string{"prod", "db", "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != store.SoulDisconnected || !slices.Equal(s.Covens, []string{"db", "prod"}) {
		t.Fatalf("accepted soul %+v", s)
	}
	_, err = admin.AcceptSoul(ctx, "h1", nil)
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)
	_, err = admin.AcceptSoul(ctx, "h1", []string{"bad coven!"})
	wantAPI(t, err, http.StatusBadRequest, domain.CodeInvalid)
	_, err = admin.AcceptSoul(ctx, "nope", nil)
	wantAPI(t, err, http.StatusNotFound, domain.CodeNotFound)

	s, err = admin.SetSoulCovens(ctx, "h2", []string{"staging"})
	if err != nil || !slices.Equal(s.Covens, []string{"staging"}) {
		t.Fatalf("covens %+v, %v", s, err)
	}
	// The soulprint shows the covens the Keeper holds, as expressions see
	// them (soulprint.self.covens), not the soul's own empty list.
	for _, get := range []func() (apitypes.Soul, error){
		func() (apitypes.Soul, error) { return admin.GetSoul(ctx, "h2") },
		func() (apitypes.Soul, error) {
			all, err := admin.ListSouls(ctx, apitypes.SoulQuery{})
			for _, x := range all {
				if x.SID == "h2" {
					return x, err
				}
			}
			return apitypes.Soul{}, err
		},
	} {
		got, err := get()
		if err != nil || fmt.Sprint(got.Soulprint["covens"]) != "[staging]" {
			t.Errorf("soulprint.covens = %v (%v), want [staging]", got.Soulprint["covens"], err)
		}
	}
	s, err = admin.RejectSoul(ctx, "h3")
	if err != nil || s.Status != store.SoulRejected {
		t.Fatalf("rejected %+v, %v", s, err)
	}
	// A rejected soul may be accepted again.
	if s, err = admin.AcceptSoul(ctx, "h3", []string{"prod"}); err != nil || s.Status != store.SoulDisconnected {
		t.Fatalf("re-accepted %+v, %v", s, err)
	}
	// Accept with no body at all.
	e.addSoul("h4", store.SoulPending)
	st, b := e.do("POST", "/v1/souls/h4/accept", e.tokens[auth.RoleAdmin], "")
	if st != http.StatusOK {
		t.Fatalf("accept without a body: %d %s", st, b)
	}

	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{Action: "POST /v1/souls/{sid}/accept"})
	if err != nil || len(entries) != 6 || entries[len(entries)-1].Target != "h1" {
		t.Fatalf("accept audit %+v, %v", entries, err)
	}
}

func TestJoinTokens(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	jt, err := admin.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web", "prod"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	secret, fp, err := jointoken.Decode(jt.Token)
	if err != nil || fp != fingerprint {
		t.Fatalf("token %q: fingerprint %q, %v", jt.Token, fp, err)
	}
	if !slices.Equal(jt.Covens, []string{"prod", "web"}) || time.Until(jt.ExpiresAt) > time.Hour {
		t.Fatalf("join token %+v", jt)
	}
	// The store keeps the hash only, and the gateway redeems by it.
	used, err := e.st.UseJoinToken(ctx, jointoken.Hash(secret), time.Now())
	if err != nil || used.ID != jt.ID || !slices.Equal(used.Covens, []string{"prod", "web"}) || used.CreatedBy != e.archons[auth.RoleAdmin].ID {
		t.Fatalf("redeemed %+v, %v", used, err)
	}
	// Default TTL and the 30d form.
	jt, err = admin.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"x"}})
	if err != nil || time.Until(jt.ExpiresAt) < 23*time.Hour {
		t.Fatalf("default ttl %+v, %v", jt, err)
	}
	st, b := e.do("POST", "/v1/join-tokens", e.tokens[auth.RoleAdmin], `{"covens":[],"ttl":"30d"}`)
	if st != http.StatusCreated {
		t.Fatalf("ttl 30d: %d %s", st, b)
	}
	st, b = e.do("POST", "/v1/join-tokens", e.tokens[auth.RoleAdmin], `{"covens":[],"ttl":"soon"}`)
	e.wantError("POST", "/v1/join-tokens", http.StatusBadRequest, "invalid", b, st)
	// The audit entry never holds the token.
	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{Action: "POST /v1/join-tokens"})
	if err != nil || len(entries) != 4 {
		t.Fatalf("audit %+v, %v", entries, err)
	}
	me, err := admin.Whoami(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		for k, v := range en.Summary {
			if k == "token_id" && v == me.TokenID {
				continue // the id of the Archon token the call was made with, not a secret
			}
			if s, ok := v.(string); ok && len(s) > 20 {
				t.Errorf("audit summary %s = %q looks like a secret", k, s)
			}
		}
	}
}

// TestJoinTokenLimitsAndRevocation: a join token limited to a number of
// uses stops working once used up; one revoked stops at once; the list
// shows uses, limits and revocations and never a secret; revocation is
// admin-only and audited.
func TestJoinTokenLimitsAndRevocation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	once, err := admin.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, MaxUses: 1})
	if err != nil || once.MaxUses != 1 {
		t.Fatalf("one-use token %+v, %v", once, err)
	}
	open, err := admin.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"db"}})
	if err != nil || open.MaxUses != 0 {
		t.Fatalf("unlimited token %+v, %v", open, err)
	}
	st, b := e.do("POST", "/v1/join-tokens", e.tokens[auth.RoleAdmin], `{"covens":[],"max_uses":-1}`)
	e.wantError("POST", "/v1/join-tokens", http.StatusBadRequest, "invalid", b, st)

	redeem := func(token string) error {
		t.Helper()
		secret, _, err := jointoken.Decode(token)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.st.UseJoinToken(ctx, jointoken.Hash(secret), time.Now())
		return err
	}
	if err := redeem(once.Token); err != nil {
		t.Fatal(err)
	}
	if err := redeem(once.Token); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("second use of a one-use token: %v, want refused", err)
	}
	if err := redeem(open.Token); err != nil {
		t.Fatal(err)
	}

	// Revocation: admin only (403 for others), then refused at once.
	wantAPI(t, e.client(auth.RoleOperator).RevokeJoinToken(ctx, open.ID), http.StatusForbidden, domain.CodeForbidden)
	_, err = e.client(auth.RoleOperator).ListJoinTokens(ctx)
	wantAPI(t, err, http.StatusForbidden, domain.CodeForbidden)
	if err := admin.RevokeJoinToken(ctx, open.ID); err != nil {
		t.Fatal(err)
	}
	if err := admin.RevokeJoinToken(ctx, open.ID); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := redeem(open.Token); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("use of a revoked token: %v, want refused", err)
	}
	wantAPI(t, admin.RevokeJoinToken(ctx, "nope"), http.StatusNotFound, domain.CodeNotFound)

	list, err := admin.ListJoinTokens(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("join tokens %+v, %v", list, err)
	}
	byID := map[string]apitypes.JoinToken{}
	for _, jt := range list {
		byID[jt.ID] = jt
	}
	if jt := byID[once.ID]; jt.Uses != 1 || jt.MaxUses != 1 || jt.RevokedAt != nil || !slices.Equal(jt.Covens, []string{"web"}) {
		t.Errorf("one-use token listed as %+v", jt)
	}
	if jt := byID[open.ID]; jt.Uses != 1 || jt.MaxUses != 0 || jt.RevokedAt == nil {
		t.Errorf("revoked token listed as %+v", jt)
	}
	st, b = e.do("GET", "/v1/join-tokens", e.tokens[auth.RoleAdmin], "")
	for _, tok := range []string{once.Token, open.Token} {
		secret, _, _ := jointoken.Decode(tok)
		if st != http.StatusOK || strings.Contains(string(b), tok) || strings.Contains(string(b), fmt.Sprintf("%x", jointoken.Hash(secret))) ||
			strings.Contains(string(b), "secret") {
			t.Fatalf("GET /v1/join-tokens: %d %s shows a secret", st, b)
		}
	}
	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{Action: "DELETE /v1/join-tokens/{id}"})
	if err != nil || len(entries) != 4 || entries[len(entries)-1].Target != open.ID {
		t.Fatalf("revocations audited: %+v, %v", entries, err)
	}
}

// TestAcceptChecksTheKey: a pending record holds whatever key said hello
// first under the SID; with key the Archon accepts only the host it means.
func TestAcceptChecksTheKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	e.addSoul("web-7", store.SoulPending)
	want := domain.KeyFingerprint([]byte("key-web-7"))

	_, err := admin.AcceptSoulKey(ctx, "web-7", []string{"prod"}, domain.KeyFingerprint([]byte("the real host's key")))
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the key the soul holds", err)
	}
	if s, _ := admin.GetSoul(ctx, "web-7"); s.Status != store.SoulPending || len(s.Covens) != 0 {
		t.Fatalf("a soul with another key was accepted: %+v", s)
	}
	// The fingerprint as the soul logs it, or without its prefix, in any case.
	for _, key := range []string{want, strings.ToUpper(strings.TrimPrefix(want, "sha256:"))} {
		e.addSoul("web-7", store.SoulPending)
		if s, err := admin.AcceptSoulKey(ctx, "web-7", []string{"prod"}, key); err != nil || s.Status != store.SoulDisconnected {
			t.Fatalf("accept with key %s: %+v, %v", key, s, err)
		}
	}
	st, b := e.do("POST", "/v1/souls/web-7/accept", e.tokens[auth.RoleAdmin], `{"covens":["prod"],"kee":"x"}`)
	e.wantError("POST", "/v1/souls/web-7/accept", http.StatusBadRequest, "invalid", b, st)
}
