package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/store"
)

// RegisterService registers a service at a git ref (admin). An invalid
// repository is an *APIError with code invalid whose Problems() list
// file:line problems; an unknown ref has code unprocessable.
func (c *Client) RegisterService(ctx context.Context, req RegisterServiceRequest) (store.Service, error) {
	var out store.Service
	return out, c.Do(ctx, http.MethodPost, "/v1/services", nil, req, &out)
}

// ListServices lists the catalog.
func (c *Client) ListServices(ctx context.Context) ([]store.Service, error) {
	return listAll[store.Service](ctx, c, "/v1/services", nil)
}

// GetService returns one catalog entry.
func (c *Client) GetService(ctx context.Context, name string) (store.Service, error) {
	var out store.Service
	return out, c.Do(ctx, http.MethodGet, "/v1/services/"+url.PathEscape(name), nil, nil, &out)
}

// UpdateService moves a service to a new ref (admin).
func (c *Client) UpdateService(ctx context.Context, name string, req UpdateServiceRequest) (store.Service, error) {
	var out store.Service
	return out, c.Do(ctx, http.MethodPatch, "/v1/services/"+url.PathEscape(name), nil, req, &out)
}

// DeleteService removes a service no incarnation uses (admin).
func (c *Client) DeleteService(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/services/"+url.PathEscape(name), nil, nil, nil)
}
