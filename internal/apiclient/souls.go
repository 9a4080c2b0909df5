package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// ListSouls lists souls, sorted by SID.
func (c *Client) ListSouls(ctx context.Context, q apitypes.SoulQuery) ([]apitypes.Soul, error) {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	for _, cv := range q.Covens {
		v.Add("coven", cv)
	}
	return listAll[apitypes.Soul](ctx, c, "/v1/souls", v)
}

// GetSoul returns one soul.
func (c *Client) GetSoul(ctx context.Context, sid string) (apitypes.Soul, error) {
	var out apitypes.Soul
	return out, c.Do(ctx, http.MethodGet, "/v1/souls/"+url.PathEscape(sid), nil, nil, &out)
}

// AcceptSoul accepts a pending soul into covens (admin).
func (c *Client) AcceptSoul(ctx context.Context, sid string, covens []string) (apitypes.Soul, error) {
	return c.AcceptSoulKey(ctx, sid, covens, "")
}

// AcceptSoulKey is AcceptSoul that accepts the soul only if it holds the
// key with fingerprint key ("" checks nothing).
func (c *Client) AcceptSoulKey(ctx context.Context, sid string, covens []string, key string) (apitypes.Soul, error) {
	var out apitypes.Soul
	return out, c.Do(ctx, http.MethodPost, "/v1/souls/"+url.PathEscape(sid)+"/accept", nil, apitypes.AcceptSoulRequest{Covens: nonNil(covens), Key: key}, &out)
}

// RejectSoul rejects a soul (admin).
func (c *Client) RejectSoul(ctx context.Context, sid string) (apitypes.Soul, error) {
	var out apitypes.Soul
	return out, c.Do(ctx, http.MethodPost, "/v1/souls/"+url.PathEscape(sid)+"/reject", nil, nil, &out)
}

// SetSoulCovens replaces a soul's covens (admin).
func (c *Client) SetSoulCovens(ctx context.Context, sid string, covens []string) (apitypes.Soul, error) {
	var out apitypes.Soul
	return out, c.Do(ctx, http.MethodPut, "/v1/souls/"+url.PathEscape(sid)+"/covens", nil, apitypes.CovensRequest{Covens: nonNil(covens)}, &out)
}

// DeleteSoul forgets a soul: its key binding, covens and incarnation
// memberships (admin).
func (c *Client) DeleteSoul(ctx context.Context, sid string) (apitypes.DeletedSoul, error) {
	var out apitypes.DeletedSoul
	return out, c.Do(ctx, http.MethodDelete, "/v1/souls/"+url.PathEscape(sid), nil, nil, &out)
}

// RekeySoul binds a soul's SID to a new public key (PEM or base64), keeping
// its covens and memberships (admin).
func (c *Client) RekeySoul(ctx context.Context, sid, key string) (apitypes.Soul, error) {
	var out apitypes.Soul
	return out, c.Do(ctx, http.MethodPost, "/v1/souls/"+url.PathEscape(sid)+"/rekey", nil, apitypes.RekeySoulRequest{Key: key}, &out)
}

// CreateJoinToken creates a join token (admin).
func (c *Client) CreateJoinToken(ctx context.Context, req apitypes.CreateJoinTokenRequest) (apitypes.CreatedJoinToken, error) {
	var out apitypes.CreatedJoinToken
	return out, c.Do(ctx, http.MethodPost, "/v1/join-tokens", nil, req, &out)
}

// ListJoinTokens lists the join tokens, oldest first, with their uses and
// without their secrets (admin).
func (c *Client) ListJoinTokens(ctx context.Context) ([]apitypes.JoinToken, error) {
	var out []apitypes.JoinToken
	return out, c.Do(ctx, http.MethodGet, "/v1/join-tokens", nil, nil, &out)
}

// RevokeJoinToken revokes a join token by id (admin).
func (c *Client) RevokeJoinToken(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/join-tokens/"+url.PathEscape(id), nil, nil, nil)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
