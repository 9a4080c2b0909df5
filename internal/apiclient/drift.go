package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// CheckDrift starts a drift check of the incarnation (operator) and
// returns its apply_id.
func (c *Client) CheckDrift(ctx context.Context, name, scenario string) (string, error) {
	var out apitypes.Accepted
	err := c.Do(ctx, http.MethodPost, incPath(name)+"/drift", nil, apitypes.DriftRequest{Scenario: scenario}, &out)
	return out.ApplyID, err
}

// GetDrift returns the incarnation's drift schedule and last report.
func (c *Client) GetDrift(ctx context.Context, name string) (apitypes.Drift, error) {
	var out apitypes.Drift
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/drift", nil, nil, &out)
}

// SetDriftSchedule sets the incarnation's drift schedule (operator).
func (c *Client) SetDriftSchedule(ctx context.Context, name, scenario string, every time.Duration) (apitypes.Drift, error) {
	var out apitypes.Drift
	return out, c.Do(ctx, http.MethodPut, incPath(name)+"/drift/schedule", nil, apitypes.DriftSchedule{Scenario: scenario, Every: apitypes.Duration(every)}, &out)
}

// DeleteDriftSchedule removes the incarnation's drift schedule (operator).
func (c *Client) DeleteDriftSchedule(ctx context.Context, name string) (apitypes.Drift, error) {
	var out apitypes.Drift
	return out, c.Do(ctx, http.MethodDelete, incPath(name)+"/drift/schedule", nil, nil, &out)
}

// ListTriggers lists the incarnation's pending triggers (GET
// /v1/incarnations/{name}/triggers), by scenario, task and host.
func (c *Client) ListTriggers(ctx context.Context, name, scenario string) ([]apitypes.Trigger, error) {
	q := url.Values{}
	if scenario != "" {
		q.Set("scenario", scenario)
	}
	var out []apitypes.Trigger
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/triggers", q, nil, &out)
}
