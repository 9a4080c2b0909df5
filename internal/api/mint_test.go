package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// TestL8TokenLaundering: audit L8 — `POST /v1/tokens {"ttl":"2562047h"}`
// with a short-lived token is a 400, not a 292-year token; a token it may
// mint expires no later than itself and dies with it.
func TestL8TokenLaundering(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	created, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "olga", Role: "operator", TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	st, b := e.do("POST", "/v1/tokens", created.Token.Token, `{"ttl":"2562047h"}`)
	e.wantError("POST", "/v1/tokens", http.StatusBadRequest, "invalid", b, st)

	leaked, _ := apiclient.New(e.srv.URL, created.Token.Token)
	child, err := leaked.CreateToken(ctx, apitypes.CreateTokenRequest{Description: "default ttl"})
	if err != nil {
		t.Fatal(err)
	}
	if child.ExpiresAt.After(created.Token.ExpiresAt) {
		t.Fatalf("minted token expires %v, after its parent %v", child.ExpiresAt, created.Token.ExpiresAt)
	}
	list, err := admin.ListTokens(ctx, created.Archon.ID)
	if err != nil {
		t.Fatal(err)
	}
	var parent string
	for _, tk := range list {
		if tk.ID == child.ID {
			parent = tk.ParentID
		}
	}
	if parent != created.Token.ID {
		t.Fatalf("minted token's parent_id %q, want %s", parent, created.Token.ID)
	}
	// Revoking the leaked token revokes the child.
	if err := admin.RevokeToken(ctx, created.Token.ID); err != nil {
		t.Fatal(err)
	}
	childClient, _ := apiclient.New(e.srv.URL, child.Token)
	_, err = childClient.Whoami(ctx)
	wantAPI(t, err, http.StatusUnauthorized, domain.CodeUnauthorized)
}
