package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

func cloudPath(kind, name string) string { return "/v1/cloud/" + kind + "/" + url.PathEscape(name) }

// SetCloudProvider registers or replaces a cloud provider (admin).
func (c *Client) SetCloudProvider(ctx context.Context, name string, req apitypes.CloudProviderRequest) (apitypes.CloudProvider, error) {
	var out apitypes.CloudProvider
	return out, c.Do(ctx, http.MethodPut, cloudPath("providers", name), nil, req, &out)
}

// GetCloudProvider returns a provider; its secrets are masked for
// non-admins.
func (c *Client) GetCloudProvider(ctx context.Context, name string) (apitypes.CloudProvider, error) {
	var out apitypes.CloudProvider
	return out, c.Do(ctx, http.MethodGet, cloudPath("providers", name), nil, nil, &out)
}

// ListCloudProviders lists the providers.
func (c *Client) ListCloudProviders(ctx context.Context) ([]apitypes.CloudProvider, error) {
	var out []apitypes.CloudProvider
	return out, c.Do(ctx, http.MethodGet, "/v1/cloud/providers", nil, nil, &out)
}

// DeleteCloudProvider deletes a provider no profile or instance uses (admin).
func (c *Client) DeleteCloudProvider(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, cloudPath("providers", name), nil, nil, nil)
}

// SetCloudProfile registers or replaces a cloud profile (admin).
func (c *Client) SetCloudProfile(ctx context.Context, name string, req apitypes.CloudProfileRequest) (apitypes.CloudProfile, error) {
	var out apitypes.CloudProfile
	return out, c.Do(ctx, http.MethodPut, cloudPath("profiles", name), nil, req, &out)
}

// GetCloudProfile returns a profile.
func (c *Client) GetCloudProfile(ctx context.Context, name string) (apitypes.CloudProfile, error) {
	var out apitypes.CloudProfile
	return out, c.Do(ctx, http.MethodGet, cloudPath("profiles", name), nil, nil, &out)
}

// ListCloudProfiles lists the profiles.
func (c *Client) ListCloudProfiles(ctx context.Context) ([]apitypes.CloudProfile, error) {
	var out []apitypes.CloudProfile
	return out, c.Do(ctx, http.MethodGet, "/v1/cloud/profiles", nil, nil, &out)
}

// DeleteCloudProfile deletes a profile (admin).
func (c *Client) DeleteCloudProfile(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, cloudPath("profiles", name), nil, nil, nil)
}

// ListCloudInstances lists the cloud instances recorded for incarnation
// ("" = every incarnation).
func (c *Client) ListCloudInstances(ctx context.Context, incarnation string) ([]apitypes.CloudInstance, error) {
	var q url.Values
	if incarnation != "" {
		q = url.Values{"incarnation": {incarnation}}
	}
	var out []apitypes.CloudInstance
	return out, c.Do(ctx, http.MethodGet, "/v1/cloud/instances", q, nil, &out)
}
