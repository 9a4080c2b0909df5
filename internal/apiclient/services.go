package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// RegisterService registers a service at a git ref (admin). An invalid
// repository is an *APIError with code invalid whose Problems() list
// file:line problems; an unknown ref has code unprocessable.
func (c *Client) RegisterService(ctx context.Context, req apitypes.RegisterServiceRequest) (apitypes.Service, error) {
	var out apitypes.Service
	return out, c.Do(ctx, http.MethodPost, "/v1/services", nil, req, &out)
}

// ListServices lists the catalog.
func (c *Client) ListServices(ctx context.Context) ([]apitypes.Service, error) {
	return listAll[apitypes.Service](ctx, c, "/v1/services", nil)
}

// GetService returns one catalog entry.
func (c *Client) GetService(ctx context.Context, name string) (apitypes.Service, error) {
	var out apitypes.Service
	return out, c.Do(ctx, http.MethodGet, "/v1/services/"+url.PathEscape(name), nil, nil, &out)
}

// UpdateService moves a service to a new ref (admin).
func (c *Client) UpdateService(ctx context.Context, name string, req apitypes.UpdateServiceRequest) (apitypes.Service, error) {
	var out apitypes.Service
	return out, c.Do(ctx, http.MethodPatch, "/v1/services/"+url.PathEscape(name), nil, req, &out)
}

// DeleteService removes a service no incarnation uses (admin).
func (c *Client) DeleteService(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/services/"+url.PathEscape(name), nil, nil, nil)
}
