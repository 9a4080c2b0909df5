package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestEveryRouteAuthenticates sends each authenticated route a request
// without a token, with a garbage, an expired and a revoked token (401),
// and with every role below the one it needs (403). Registering a route
// puts it under this test.
func TestEveryRouteAuthenticates(t *testing.T) {
	e := newEnv(t)
	groups := map[string]bool{}
	for _, rt := range e.api.Routes() {
		if rt.Role == "" {
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
				if r.Allows(rt.Role) {
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

	created, err := admin.CreateArchon(ctx, apiclient.CreateArchonRequest{Name: "olga", Role: "operator", TTL: apiclient.Duration(2 * time.Hour)})
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
	_, err = admin.CreateArchon(ctx, apiclient.CreateArchonRequest{Name: "olga", Role: "viewer"})
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)
	_, err = admin.CreateArchon(ctx, apiclient.CreateArchonRequest{Name: "root", Role: "god"})
	wantAPI(t, err, http.StatusBadRequest, domain.CodeInvalid)

	// An operator makes tokens for itself, not for others.
	own, err := olga.CreateToken(ctx, apiclient.CreateTokenRequest{TTL: apiclient.Duration(time.Hour), Description: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = olga.CreateToken(ctx, apiclient.CreateTokenRequest{ArchonID: e.archons[auth.RoleViewer].ID})
	wantAPI(t, err, http.StatusForbidden, domain.CodeForbidden)
	// The admin makes one for the viewer.
	vt, err := admin.CreateToken(ctx, apiclient.CreateTokenRequest{ArchonID: e.archons[auth.RoleViewer].ID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.CreateToken(ctx, apiclient.CreateTokenRequest{ArchonID: "nobody"})
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
	if err != nil || len(archons) != 4 {
		t.Fatalf("archons = %v, %v", archons, err)
	}
}

func TestAuditMasksSecrets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	if _, err := admin.CreateArchon(ctx, apiclient.CreateArchonRequest{Name: "vic", Role: "viewer"}); err != nil {
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
	if _, err := admin.ListSouls(ctx, apiclient.SoulQuery{}); err != nil {
		t.Fatal(err)
	}

	entries, err := admin.ListAudit(ctx, apiclient.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	byAction := map[string][]store.AuditEntry{}
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
	filtered, err := admin.ListAudit(ctx, apiclient.AuditQuery{Action: "POST /v1/archons", Limit: 1})
	if err != nil || len(filtered) != 1 || filtered[0].Action != "POST /v1/archons" {
		t.Fatalf("filtered audit %+v, %v", filtered, err)
	}
	_, err = admin.ListAudit(ctx, apiclient.AuditQuery{Limit: -1})
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
