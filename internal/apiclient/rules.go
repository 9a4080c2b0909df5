package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// ListRules lists the Keeper-wide rules and those of every incarnation.
func (c *Client) ListRules(ctx context.Context) ([]apitypes.Rule, error) {
	var out []apitypes.Rule
	return out, c.Do(ctx, http.MethodGet, "/v1/rules", nil, nil, &out)
}

// RuleHistoryFilter selects recorded decisions.
type RuleHistoryFilter struct {
	Rule, Incarnation, Decision string
	Before                      int64
	Limit                       int
}

// RuleHistory lists the rules' decisions, newest first.
func (c *Client) RuleHistory(ctx context.Context, f RuleHistoryFilter) ([]apitypes.Firing, error) {
	q := url.Values{}
	for k, v := range map[string]string{"rule": f.Rule, "incarnation": f.Incarnation, "decision": f.Decision} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Before > 0 {
		q.Set("before", strconv.FormatInt(f.Before, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out []apitypes.Firing
	return out, c.Do(ctx, http.MethodGet, "/v1/rules/history", q, nil, &out)
}

// PutKeeperRule sets a Keeper-wide rule (admin).
func (c *Client) PutKeeperRule(ctx context.Context, name, source string) (apitypes.Rule, error) {
	var out apitypes.Rule
	return out, c.Do(ctx, http.MethodPut, "/v1/keeper-rules/"+url.PathEscape(name), nil, apitypes.PutRuleRequest{Source: source}, &out)
}

// DeleteKeeperRule deletes a Keeper-wide rule (admin).
func (c *Client) DeleteKeeperRule(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/keeper-rules/"+url.PathEscape(name), nil, nil, nil)
}

// PauseRule pauses scope/name (scope: keeper or an incarnation).
func (c *Client) PauseRule(ctx context.Context, scope, name, reason string) error {
	return c.Do(ctx, http.MethodPost, "/v1/rules/"+url.PathEscape(scope)+"/"+url.PathEscape(name)+"/pause", nil, apitypes.PauseRuleRequest{Reason: reason}, nil)
}

// ResumeRule resumes scope/name.
func (c *Client) ResumeRule(ctx context.Context, scope, name string) error {
	return c.Do(ctx, http.MethodPost, "/v1/rules/"+url.PathEscape(scope)+"/"+url.PathEscape(name)+"/resume", nil, struct{}{}, nil)
}

// ListEndpoints lists the notification endpoints (admin).
func (c *Client) ListEndpoints(ctx context.Context) ([]apitypes.Endpoint, error) {
	var out []apitypes.Endpoint
	return out, c.Do(ctx, http.MethodGet, "/v1/notify/endpoints", nil, nil, &out)
}

// PutEndpoint sets a notification endpoint (admin).
func (c *Client) PutEndpoint(ctx context.Context, name string, req apitypes.PutEndpointRequest) (apitypes.Endpoint, error) {
	var out apitypes.Endpoint
	return out, c.Do(ctx, http.MethodPut, "/v1/notify/endpoints/"+url.PathEscape(name), nil, req, &out)
}

// DeleteEndpoint deletes a notification endpoint (admin).
func (c *Client) DeleteEndpoint(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/notify/endpoints/"+url.PathEscape(name), nil, nil, nil)
}

// TestEndpoint sends a test notification now (admin).
func (c *Client) TestEndpoint(ctx context.Context, name string) (apitypes.NotifyTestResult, error) {
	var out apitypes.NotifyTestResult
	return out, c.Do(ctx, http.MethodPost, "/v1/notify/endpoints/"+url.PathEscape(name)+"/test", nil, struct{}{}, &out)
}

// ListDeliveries lists notifications by status ("dead": the dead letters).
func (c *Client) ListDeliveries(ctx context.Context, status string) ([]apitypes.Delivery, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	var out []apitypes.Delivery
	return out, c.Do(ctx, http.MethodGet, "/v1/notify/deliveries", q, nil, &out)
}
