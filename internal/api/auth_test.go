package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// TestEveryRouteAuthenticates sends each authenticated route a request
// without a token, with a garbage, an expired and a revoked token (401),
// and with every role below the one it needs (403). Registering a route
// puts it under this test.
func TestEveryRouteAuthenticates(t *testing.T) {
	e := newEnv(t)
	groups := map[string]bool{}
	for _, rt := range e.api.Routes() {
		if rt.Public {
			continue
		}
		method, path := concrete(rt.Pattern)
		groups[strings.Split(path, "/")[2]] = true
		t.Run(rt.Pattern, func(t *testing.T) {
			for name, tok := range map[string]string{
				"missing": "", "garbage": "not-a-jwt", "expired": e.expired, "revoked": e.revoked,
			} {
				st, b := e.do(method, path, tok, "{}")
				d := e.wantError(method, path, http.StatusUnauthorized, "unauthorized", b, st)
				if name == "expired" && !strings.Contains(d.Message, "expired") ||
					name == "revoked" && !strings.Contains(d.Message, "revoked") {
					t.Errorf("%s token: message %q does not say why", name, d.Message)
				}
			}
			for _, r := range auth.Roles {
				if builtinAllows(r, rt) {
					continue
				}
				st, b := e.do(method, path, e.tokens[r], "{}")
				e.wantError(method, path, http.StatusForbidden, "forbidden", b, st)
			}
		})
	}
	for _, g := range []string{"archons", "tokens", "audit", "whoami", "souls", "join-tokens", "services"} {
		if !groups[g] {
			t.Errorf("route group /v1/%s not covered", g)
		}
	}
}

func TestArchonsAndTokens(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)

	created, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "olga", Role: "operator", TTL: apitypes.Duration(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if created.Archon.Role != "operator" || created.Token.Token == "" || time.Until(created.Token.ExpiresAt) > 2*time.Hour {
		t.Fatalf("created %+v", created)
	}
	olga, err := apiclient.New(e.srv.URL, created.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	who, err := olga.Whoami(ctx)
	if err != nil || who.Name != "olga" || who.Role != "operator" || who.ArchonID != created.Archon.ID {
		t.Fatalf("whoami = %+v, %v", who, err)
	}

	// Duplicate names and unknown roles.
	_, err = admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "olga", Role: "viewer"})
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)
	_, err = admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "root", Role: "god"})
	wantAPI(t, err, http.StatusBadRequest, domain.CodeInvalid)

	// An operator makes tokens for itself, not for others.
	own, err := olga.CreateToken(ctx, apitypes.CreateTokenRequest{TTL: apitypes.Duration(time.Hour), Description: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = olga.CreateToken(ctx, apitypes.CreateTokenRequest{ArchonID: e.archons[auth.RoleViewer].ID})
	wantAPI(t, err, http.StatusForbidden, domain.CodeForbidden)
	// The admin makes one for the viewer.
	vt, err := admin.CreateToken(ctx, apitypes.CreateTokenRequest{ArchonID: e.archons[auth.RoleViewer].ID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.CreateToken(ctx, apitypes.CreateTokenRequest{ArchonID: "nobody"})
	wantAPI(t, err, http.StatusNotFound, domain.CodeNotFound)

	// An operator cannot revoke the viewer's token (it looks absent)…
	wantAPI(t, olga.RevokeToken(ctx, vt.ID), http.StatusNotFound, domain.CodeNotFound)
	// …but revokes its own, which then stops working at once.
	if err := olga.RevokeToken(ctx, own.ID); err != nil {
		t.Fatal(err)
	}
	ownClient, _ := apiclient.New(e.srv.URL, own.Token)
	_, err = ownClient.Whoami(ctx)
	wantAPI(t, err, http.StatusUnauthorized, domain.CodeUnauthorized)
	// The admin revokes olga's first token.
	if err := admin.RevokeToken(ctx, created.Token.ID); err != nil {
		t.Fatal(err)
	}
	_, err = olga.Whoami(ctx)
	wantAPI(t, err, http.StatusUnauthorized, domain.CodeUnauthorized)
	wantAPI(t, admin.RevokeToken(ctx, "nope"), http.StatusNotFound, domain.CodeNotFound)

	archons, err := admin.ListArchons(ctx)
	if err != nil || len(archons) != len(auth.Roles)+1 {
		t.Fatalf("archons = %v, %v", archons, err)
	}
}

// TestLockOutAnArchon: a leaked operator token mints more tokens; the
// admin finds them all (GET /v1/tokens) and disables the Archon, which
// refuses every one of them at once (audited); the last enabled admin
// cannot be disabled.
func TestLockOutAnArchon(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	created, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "olga", Role: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	olgaID := created.Archon.ID
	leaked, _ := apiclient.New(e.srv.URL, created.Token.Token)
	minted, err := leaked.CreateToken(ctx, apitypes.CreateTokenRequest{Description: "not olga"})
	if err != nil {
		t.Fatal(err)
	}

	// The admin sees every token, and narrows to olga's.
	all, err := admin.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ts []apitypes.Token) map[string]bool {
		m := map[string]bool{}
		for _, tk := range ts {
			m[tk.ID] = true
		}
		return m
	}
	if m := ids(all); !m[created.Token.ID] || !m[minted.ID] || len(all) < 6 {
		t.Fatalf("admin's token list lacks olga's tokens: %+v", all)
	}
	olgas, err := admin.ListTokens(ctx, olgaID)
	if err != nil || len(olgas) != 2 || !ids(olgas)[minted.ID] || olgas[1].Description != "not olga" {
		t.Fatalf("olga's tokens: %+v, %v", olgas, err)
	}
	if st, b := e.do("GET", "/v1/tokens", e.tokens[auth.RoleAdmin], ""); st != http.StatusOK || strings.Contains(string(b), created.Token.Token) {
		t.Fatalf("GET /v1/tokens: %d, shows a token: %s", st, b)
	}
	// Others see their own only.
	own, err := leaked.ListTokens(ctx, "")
	if err != nil || len(own) != 2 {
		t.Fatalf("olga's own list: %+v, %v", own, err)
	}
	_, err = leaked.ListTokens(ctx, e.archons[auth.RoleAdmin].ID)
	wantAPI(t, err, http.StatusForbidden, domain.CodeForbidden)
	if vs, err := e.client(auth.RoleViewer).ListTokens(ctx, ""); err != nil || len(vs) != 1 || vs[0].ArchonID != e.archons[auth.RoleViewer].ID {
		t.Fatalf("the viewer's own list: %+v, %v", vs, err)
	}

	// Disable: only an admin may; then every token of olga's is refused.
	_, err = leaked.DisableArchon(ctx, olgaID)
	wantAPI(t, err, http.StatusForbidden, domain.CodeForbidden)
	ar, err := admin.DisableArchon(ctx, olgaID)
	if err != nil || ar.DisabledAt == nil || ar.ID != olgaID {
		t.Fatalf("disable: %+v, %v", ar, err)
	}
	for _, tok := range []string{created.Token.Token, minted.Token} {
		st, b := e.do("GET", "/v1/whoami", tok, "")
		if d := e.wantError("GET", "/v1/whoami", http.StatusUnauthorized, "unauthorized", b, st); d.Message != "archon disabled" {
			t.Errorf("a disabled archon's token: message %q", d.Message)
		}
	}
	_, err = admin.CreateToken(ctx, apitypes.CreateTokenRequest{ArchonID: olgaID})
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)
	archons, err := admin.ListArchons(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range archons {
		if (a.ID == olgaID) != (a.DisabledAt != nil) {
			t.Errorf("archon list: %+v", a)
		}
	}

	// The last enabled admin stays; unknown archons are 404.
	_, err = admin.DisableArchon(ctx, e.archons[auth.RoleAdmin].ID)
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)
	if _, err := admin.Whoami(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = admin.DisableArchon(ctx, "nobody")
	wantAPI(t, err, http.StatusNotFound, domain.CodeNotFound)

	// Disabling revoked olga's tokens (SPEC §10.2): enabling her again
	// brings none of them back; the admin issues her a new one.
	if ar, err := admin.EnableArchon(ctx, olgaID); err != nil || ar.DisabledAt != nil {
		t.Fatalf("enable: %+v, %v", ar, err)
	}
	for _, tok := range []string{created.Token.Token, minted.Token} {
		st, b := e.do("GET", "/v1/whoami", tok, "")
		if d := e.wantError("GET", "/v1/whoami", http.StatusUnauthorized, "unauthorized", b, st); d.Message != "token revoked" {
			t.Errorf("a token of a disabled, then enabled archon: message %q", d.Message)
		}
	}
	fresh, err := admin.CreateToken(ctx, apitypes.CreateTokenRequest{ArchonID: olgaID})
	if err != nil {
		t.Fatal(err)
	}
	freshClient, _ := apiclient.New(e.srv.URL, fresh.Token)
	if who, err := freshClient.Whoami(ctx); err != nil || who.Role != "operator" {
		t.Fatalf("olga's new token after enable: %+v, %v", who, err)
	}

	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // action → archon of its latest entry on olga
	for _, en := range entries {
		if _, ok := seen[en.Action]; !ok && en.Target == olgaID {
			seen[en.Action] = en.ArchonID
		}
	}
	for _, action := range []string{"POST /v1/archons/{id}/disable", "POST /v1/archons/{id}/enable"} {
		if seen[action] != e.archons[auth.RoleAdmin].ID {
			t.Errorf("%s of olga not audited as the admin's: %v", action, seen)
		}
	}
}

func TestAuditMasksSecrets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	if _, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "vic", Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
	// A body with secrets (refused: unknown fields) is still audited, masked.
	st, b := e.do("POST", "/v1/join-tokens", e.tokens[auth.RoleAdmin],
		`{"covens":["prod"],"password":"hunter2","nested":{"api_token":"abc"}}`)
	e.wantError("POST", "/v1/join-tokens", http.StatusBadRequest, "invalid", b, st)
	// A refused call (403) is audited too.
	st, b = e.do("POST", "/v1/archons", e.tokens[auth.RoleViewer], `{"name":"x","role":"admin"}`)
	e.wantError("POST", "/v1/archons", http.StatusForbidden, "forbidden", b, st)
	// Reads are not audited.
	if _, err := admin.ListSouls(ctx, apitypes.SoulQuery{}); err != nil {
		t.Fatal(err)
	}

	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	byAction := map[string][]apitypes.AuditEntry{}
	for _, en := range entries {
		byAction[en.Action] = append(byAction[en.Action], en)
		if strings.HasPrefix(en.Action, "GET ") {
			t.Errorf("read audited: %+v", en)
		}
	}
	jt := byAction["POST /v1/join-tokens"]
	if len(jt) != 1 {
		t.Fatalf("join-token entries %+v", jt)
	}
	if s := jt[0].Summary; s["password"] != auth.Masked || s["nested"].(map[string]any)["api_token"] != auth.Masked ||
		s["status"] != float64(400) || jt[0].ArchonID != e.archons[auth.RoleAdmin].ID {
		t.Errorf("join-token entry %+v", jt[0])
	}
	ar := byAction["POST /v1/archons"]
	if len(ar) != 2 {
		t.Fatalf("archon entries %+v", ar)
	}
	// Newest first: the refused viewer call, then the admin's.
	if ar[0].ArchonID != e.archons[auth.RoleViewer].ID || ar[0].Summary["status"] != float64(403) {
		t.Errorf("refused call entry %+v", ar[0])
	}
	if ar[1].Summary["name"] != "vic" || ar[1].Summary["status"] != float64(201) || ar[1].Target == "" || ar[1].Time.IsZero() {
		t.Errorf("create archon entry %+v", ar[1])
	}
	// Every entry names the token the call was made with (SPEC §14).
	if me, err := admin.Whoami(ctx); err != nil || me.TokenID == "" || ar[1].Summary["token_id"] != me.TokenID {
		t.Errorf("create archon entry names token %v, want the admin's %q (%v)", ar[1].Summary["token_id"], me.TokenID, err)
	}
	filtered, err := admin.ListAudit(ctx, apitypes.AuditQuery{Action: "POST /v1/archons", Limit: 1})
	if err != nil || len(filtered) != 1 || filtered[0].Action != "POST /v1/archons" {
		t.Fatalf("filtered audit %+v, %v", filtered, err)
	}
	_, err = admin.ListAudit(ctx, apitypes.AuditQuery{Limit: -1})
	if err != nil {
		t.Fatal(err) // a non-positive limit is not sent
	}
	st, b = e.do("GET", "/v1/audit?limit=abc", e.tokens[auth.RoleAdmin], "")
	e.wantError("GET", "/v1/audit", http.StatusBadRequest, "invalid", b, st)
}

func TestStrictBodies(t *testing.T) {
	e := newEnv(t)
	tok := e.tokens[auth.RoleAdmin]
	for _, tc := range []struct{ body, want string }{
		{`{"name":"a","role":"viewer","extra":1}`, `unknown field "extra"`},
		{`{"name":`, "not valid JSON"},
		{`{"name":"a","role":7}`, `"role"`},
		{`{"name":"a","role":"viewer"} {}`, "after the JSON object"},
		{``, "body required"},
	} {
		st, b := e.do("POST", "/v1/archons", tok, tc.body)
		d := e.wantError("POST", "/v1/archons", http.StatusBadRequest, "invalid", b, st)
		if !strings.Contains(d.Message, tc.want) {
			t.Errorf("body %q: message %q, want it to contain %q", tc.body, d.Message, tc.want)
		}
	}
	st, b := e.do("GET", "/v1/nowhere", tok, "")
	e.wantError("GET", "/v1/nowhere", http.StatusNotFound, "not_found", b, st)
}

func wantAPI(t *testing.T, err error, status int, code domain.Code) {
	t.Helper()
	ae, ok := err.(*apiclient.APIError)
	if !ok || ae.Status != status || ae.Code != string(code) {
		t.Fatalf("error %v, want %d %s", err, status, code)
	}
	if domain.ErrorCode(err) != code {
		t.Fatalf("domain.ErrorCode(%v) = %s", err, domain.ErrorCode(err))
	}
}
