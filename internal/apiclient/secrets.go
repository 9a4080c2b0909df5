package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

func secretPath(name string) string { return "/v1/secrets/" + url.PathEscape(name) }

// SetSecret sets (or replaces) the secret name (admin). The answer holds
// the entry without its value.
func (c *Client) SetSecret(ctx context.Context, name, value string) (apitypes.Secret, error) {
	var out apitypes.Secret
	return out, c.Do(ctx, http.MethodPut, secretPath(name), nil, apitypes.SetSecretRequest{Secret: value}, &out)
}

// SetScopedSecret sets the secret name and its scope (keeper,
// service:NAME or incarnation:NAME): only that scope's scenarios may read
// it.
func (c *Client) SetScopedSecret(ctx context.Context, name, value, scope string) (apitypes.Secret, error) {
	var out apitypes.Secret
	return out, c.Do(ctx, http.MethodPut, secretPath(name), nil, apitypes.SetSecretRequest{Secret: value, Scope: scope}, &out)
}

// ListSecrets lists the secrets' names, owners and times (operator).
func (c *Client) ListSecrets(ctx context.Context) ([]apitypes.Secret, error) {
	var out []apitypes.Secret
	return out, c.Do(ctx, http.MethodGet, "/v1/secrets", nil, nil, &out)
}

// DeleteSecret deletes the secret name (admin).
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, secretPath(name), nil, nil, nil)
}
