package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/store"
)

// CloudProviderRequest is the body of PUT /v1/cloud/providers/{name}.
type CloudProviderRequest struct {
	Kind   string         `json:"kind"`
	Config map[string]any `json:"config,omitempty"`
}

// CloudProfileRequest is the body of PUT /v1/cloud/profiles/{name}.
type CloudProfileRequest struct {
	Provider string         `json:"provider"`
	Spec     map[string]any `json:"spec,omitempty"`
	Covens   []string       `json:"covens,omitempty"`
}

func cloudPath(kind, name string) string { return "/v1/cloud/" + kind + "/" + url.PathEscape(name) }

// SetCloudProvider registers or replaces a cloud provider (admin).
func (c *Client) SetCloudProvider(ctx context.Context, name string, req CloudProviderRequest) (store.CloudProvider, error) {
	var out store.CloudProvider
	return out, c.Do(ctx, http.MethodPut, cloudPath("providers", name), nil, req, &out)
}

// GetCloudProvider returns a provider; its secrets are masked for
// non-admins.
func (c *Client) GetCloudProvider(ctx context.Context, name string) (store.CloudProvider, error) {
	var out store.CloudProvider
	return out, c.Do(ctx, http.MethodGet, cloudPath("providers", name), nil, nil, &out)
}

// ListCloudProviders lists the providers.
func (c *Client) ListCloudProviders(ctx context.Context) ([]store.CloudProvider, error) {
	var out []store.CloudProvider
	return out, c.Do(ctx, http.MethodGet, "/v1/cloud/providers", nil, nil, &out)
}

// DeleteCloudProvider deletes a provider no profile or instance uses (admin).
func (c *Client) DeleteCloudProvider(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, cloudPath("providers", name), nil, nil, nil)
}

// SetCloudProfile registers or replaces a cloud profile (admin).
func (c *Client) SetCloudProfile(ctx context.Context, name string, req CloudProfileRequest) (store.CloudProfile, error) {
	var out store.CloudProfile
	return out, c.Do(ctx, http.MethodPut, cloudPath("profiles", name), nil, req, &out)
}

// GetCloudProfile returns a profile.
func (c *Client) GetCloudProfile(ctx context.Context, name string) (store.CloudProfile, error) {
	var out store.CloudProfile
	return out, c.Do(ctx, http.MethodGet, cloudPath("profiles", name), nil, nil, &out)
}

// ListCloudProfiles lists the profiles.
func (c *Client) ListCloudProfiles(ctx context.Context) ([]store.CloudProfile, error) {
	var out []store.CloudProfile
	return out, c.Do(ctx, http.MethodGet, "/v1/cloud/profiles", nil, nil, &out)
}

// DeleteCloudProfile deletes a profile (admin).
func (c *Client) DeleteCloudProfile(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, cloudPath("profiles", name), nil, nil, nil)
}

// ListCloudInstances lists the cloud instances recorded for incarnation
// ("" = every incarnation).
func (c *Client) ListCloudInstances(ctx context.Context, incarnation string) ([]store.CloudInstance, error) {
	var q url.Values
	if incarnation != "" {
		q = url.Values{"incarnation": {incarnation}}
	}
	var out []store.CloudInstance
	return out, c.Do(ctx, http.MethodGet, "/v1/cloud/instances", q, nil, &out)
}
