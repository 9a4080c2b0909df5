package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// IncarnationHealth returns an incarnation's health (viewer).
func (c *Client) IncarnationHealth(ctx context.Context, name string) (apitypes.IncarnationHealth, error) {
	var out apitypes.IncarnationHealth
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/health", nil, nil, &out)
}

// HealthOverview returns the health counts of every incarnation (viewer).
func (c *Client) HealthOverview(ctx context.Context) (apitypes.HealthOverview, error) {
	var out apitypes.HealthOverview
	return out, c.Do(ctx, http.MethodGet, "/v1/health", nil, nil, &out)
}

// SoulVitals returns a soul's vital signs (viewer).
func (c *Client) SoulVitals(ctx context.Context, sid string) (apitypes.SoulVitals, error) {
	var out apitypes.SoulVitals
	return out, c.Do(ctx, http.MethodGet, "/v1/souls/"+url.PathEscape(sid)+"/vitals", nil, nil, &out)
}
