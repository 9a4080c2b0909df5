package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// CreateIncarnation creates an incarnation and starts its create scenario
// (operator); the answer carries the run's apply_id.
func (c *Client) CreateIncarnation(ctx context.Context, req apitypes.CreateIncarnationRequest) (apitypes.Accepted, error) {
	var out apitypes.Accepted
	return out, c.Do(ctx, http.MethodPost, "/v1/incarnations", nil, req, &out)
}

// ListIncarnations lists every incarnation, by name.
func (c *Client) ListIncarnations(ctx context.Context) ([]apitypes.Incarnation, error) {
	return listAll[apitypes.Incarnation](ctx, c, "/v1/incarnations", nil)
}

// GetIncarnation returns one incarnation with its members, status and
// committed state.
func (c *Client) GetIncarnation(ctx context.Context, name string) (apitypes.Incarnation, error) {
	var out apitypes.Incarnation
	return out, c.Do(ctx, http.MethodGet, incPath(name), nil, nil, &out)
}

// IncarnationHistory returns the committed snapshots, newest first (limit
// <= 0: all).
func (c *Client) IncarnationHistory(ctx context.Context, name string, limit int) ([]apitypes.Snapshot, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var out []apitypes.Snapshot
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/history", q, nil, &out)
}

// StartRun starts a scenario on an incarnation (operator). A run already
// active is an *APIError with code conflict whose Details is its apply_id.
func (c *Client) StartRun(ctx context.Context, name string, req apitypes.StartRunRequest) (apitypes.Accepted, error) {
	var out apitypes.Accepted
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/runs", nil, req, &out)
}

// UnlockIncarnation moves an error_locked incarnation back to ready
// (operator, audited with the reason).
func (c *Client) UnlockIncarnation(ctx context.Context, name, reason string) (apitypes.Incarnation, error) {
	var out apitypes.Incarnation
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/unlock", nil, apitypes.UnlockRequest{Reason: reason}, &out)
}

// UpgradeMigrate upgrades the incarnation to ref through the migration
// scenario migrate (operator) and returns the migration run's apply_id.
func (c *Client) UpgradeMigrate(ctx context.Context, name, ref, migrate string) (string, error) {
	var out apitypes.Accepted
	err := c.Do(ctx, http.MethodPost, incPath(name)+"/upgrade", nil, apitypes.UpgradeRequest{Ref: ref, Migrate: migrate}, &out)
	return out.ApplyID, err
}

// UpgradeIncarnation pins the incarnation to the commit ref points at now
// (operator).
func (c *Client) UpgradeIncarnation(ctx context.Context, name, ref string) (apitypes.Incarnation, error) {
	var out apitypes.Incarnation
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/upgrade", nil, apitypes.UpgradeRequest{Ref: ref}, &out)
}

// AddMembers adds souls to the membership relation (operator).
func (c *Client) AddMembers(ctx context.Context, name string, sids []string) (apitypes.Incarnation, error) {
	var out apitypes.Incarnation
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/members", nil, apitypes.MembersRequest{SIDs: sids}, &out)
}

// RemoveMembers removes souls from the membership relation (operator).
func (c *Client) RemoveMembers(ctx context.Context, name string, sids []string) (apitypes.Incarnation, error) {
	var out apitypes.Incarnation
	return out, c.Do(ctx, http.MethodDelete, incPath(name)+"/members", nil, apitypes.MembersRequest{SIDs: sids}, &out)
}

// DeleteIncarnation deletes an incarnation without an active run, with its
// runs and history (operator).
func (c *Client) DeleteIncarnation(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, incPath(name), nil, nil, nil)
}

func incPath(name string) string { return "/v1/incarnations/" + url.PathEscape(name) }
