package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// Health calls /healthz: nil when the keeper process is up.
func (c *Client) Health(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// Ready calls /readyz: nil when the keeper's store answers.
func (c *Client) Ready(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/readyz", nil, nil, nil)
}

// OpenAPI returns the OpenAPI document of the API.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	return doc, c.Do(ctx, http.MethodGet, "/v1/openapi.json", nil, nil, &doc)
}

// Whoami returns the calling Archon.
func (c *Client) Whoami(ctx context.Context) (apitypes.Whoami, error) {
	var w apitypes.Whoami
	return w, c.Do(ctx, http.MethodGet, "/v1/whoami", nil, nil, &w)
}

// CreateArchon creates an Archon and issues its first token (admin).
func (c *Client) CreateArchon(ctx context.Context, req apitypes.CreateArchonRequest) (apitypes.CreatedArchon, error) {
	var out apitypes.CreatedArchon
	return out, c.Do(ctx, http.MethodPost, "/v1/archons", nil, req, &out)
}

// ListArchons lists the Archons (admin).
func (c *Client) ListArchons(ctx context.Context) ([]apitypes.Archon, error) {
	return listAll[apitypes.Archon](ctx, c, "/v1/archons", nil)
}

// DisableArchon disables an Archon: all its tokens are refused until
// EnableArchon (admin).
func (c *Client) DisableArchon(ctx context.Context, id string) (apitypes.Archon, error) {
	var out apitypes.Archon
	return out, c.Do(ctx, http.MethodPost, "/v1/archons/"+url.PathEscape(id)+"/disable", nil, nil, &out)
}

// EnableArchon enables a disabled Archon again (admin).
func (c *Client) EnableArchon(ctx context.Context, id string) (apitypes.Archon, error) {
	var out apitypes.Archon
	return out, c.Do(ctx, http.MethodPost, "/v1/archons/"+url.PathEscape(id)+"/enable", nil, nil, &out)
}

// ListTokens lists token records, oldest first: the caller's own, or (admin)
// every Archon's, or archonID's when given.
func (c *Client) ListTokens(ctx context.Context, archonID string) ([]apitypes.Token, error) {
	v := url.Values{}
	if archonID != "" {
		v.Set("archon_id", archonID)
	}
	return listAll[apitypes.Token](ctx, c, "/v1/tokens", v)
}

// CreateToken issues a token for the caller or (admin) another Archon.
func (c *Client) CreateToken(ctx context.Context, req apitypes.CreateTokenRequest) (apitypes.IssuedToken, error) {
	var out apitypes.IssuedToken
	return out, c.Do(ctx, http.MethodPost, "/v1/tokens", nil, req, &out)
}

// RevokeToken revokes a token by id.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, nil, nil)
}

// ListAudit returns audit entries, newest first (admin).
func (c *Client) ListAudit(ctx context.Context, q apitypes.AuditQuery) ([]apitypes.AuditEntry, error) {
	v := url.Values{}
	if q.ArchonID != "" {
		v.Set("archon_id", q.ArchonID)
	}
	if q.Action != "" {
		v.Set("action", q.Action)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out []apitypes.AuditEntry
	return out, c.Do(ctx, http.MethodGet, "/v1/audit", v, nil, &out)
}
