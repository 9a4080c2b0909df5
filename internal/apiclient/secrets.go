package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/store"
)

// Secret is one entry of the Keeper's secret store as the API shows it:
// never its value (SPEC §10.5). UsedBy lists what references it:
// "service/<name>/<scenario>" (secret("name") at the service's pinned
// commit) and "procedure/<name>" (default_secret).
type Secret struct {
	store.Secret
	UsedBy []string `json:"used_by,omitempty"`
}

// SetSecretRequest is the body of PUT /v1/secrets/{name}. The field is
// named so that the audit log masks it by name, refused calls included.
type SetSecretRequest struct {
	Secret string `json:"secret"`
}

func secretPath(name string) string { return "/v1/secrets/" + url.PathEscape(name) }

// SetSecret sets (or replaces) the secret name (admin). The answer holds
// the entry without its value.
func (c *Client) SetSecret(ctx context.Context, name, value string) (Secret, error) {
	var out Secret
	return out, c.Do(ctx, http.MethodPut, secretPath(name), nil, SetSecretRequest{Secret: value}, &out)
}

// ListSecrets lists the secrets' names, owners and times (operator).
func (c *Client) ListSecrets(ctx context.Context) ([]Secret, error) {
	var out []Secret
	return out, c.Do(ctx, http.MethodGet, "/v1/secrets", nil, nil, &out)
}

// DeleteSecret deletes the secret name (admin).
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, secretPath(name), nil, nil, nil)
}
