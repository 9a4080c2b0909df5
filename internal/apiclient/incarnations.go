package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/soulstack/soulstack/internal/store"
)

// CreateIncarnationRequest is the body of POST /v1/incarnations. The
// members are the accepted souls carrying all Covens, computed once.
type CreateIncarnationRequest struct {
	Name    string         `json:"name"`
	Service string         `json:"service"`
	Covens  []string       `json:"covens"`
	Input   map[string]any `json:"input,omitempty"`
	Essence map[string]any `json:"essence,omitempty"`
}

// Accepted is the 202 answer of a call that starts a run.
type Accepted struct {
	ApplyID string `json:"apply_id"`
}

// StartRunRequest is the body of POST /v1/incarnations/{name}/runs.
type StartRunRequest struct {
	Scenario string         `json:"scenario"`
	Input    map[string]any `json:"input,omitempty"`
	Check    bool           `json:"check,omitempty"`
}

// UnlockRequest is the body of POST /v1/incarnations/{name}/unlock; the
// reason is required and lands in the audit log.
type UnlockRequest struct {
	Reason string `json:"reason"`
}

// UpgradeRequest is the body of POST /v1/incarnations/{name}/upgrade: the
// git ref of the service to pin the incarnation to.
type UpgradeRequest struct {
	Ref string `json:"ref"`
	// Migrate names a scenario of the new commit that runs right after
	// the switch (202 with its apply_id); the incarnation moves to the new
	// commit only when it commits a state that fits the new state_schema.
	// Without it an upgrade whose schema rejects the committed state is
	// refused (422).
	Migrate string `json:"migrate,omitempty"`
}

// MembersRequest is the body of POST and DELETE
// /v1/incarnations/{name}/members.
type MembersRequest struct {
	SIDs []string `json:"sids"`
}

// CreateIncarnation creates an incarnation and starts its create scenario
// (operator); the answer carries the run's apply_id.
func (c *Client) CreateIncarnation(ctx context.Context, req CreateIncarnationRequest) (Accepted, error) {
	var out Accepted
	return out, c.Do(ctx, http.MethodPost, "/v1/incarnations", nil, req, &out)
}

// ListIncarnations lists every incarnation, by name.
func (c *Client) ListIncarnations(ctx context.Context) ([]store.Incarnation, error) {
	return listAll[store.Incarnation](ctx, c, "/v1/incarnations", nil)
}

// GetIncarnation returns one incarnation with its members, status and
// committed state.
func (c *Client) GetIncarnation(ctx context.Context, name string) (store.Incarnation, error) {
	var out store.Incarnation
	return out, c.Do(ctx, http.MethodGet, incPath(name), nil, nil, &out)
}

// IncarnationHistory returns the committed snapshots, newest first (limit
// <= 0: all).
func (c *Client) IncarnationHistory(ctx context.Context, name string, limit int) ([]store.Snapshot, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var out []store.Snapshot
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/history", q, nil, &out)
}

// StartRun starts a scenario on an incarnation (operator). A run already
// active is an *APIError with code conflict whose Details is its apply_id.
func (c *Client) StartRun(ctx context.Context, name string, req StartRunRequest) (Accepted, error) {
	var out Accepted
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/runs", nil, req, &out)
}

// UnlockIncarnation moves an error_locked incarnation back to ready
// (operator, audited with the reason).
func (c *Client) UnlockIncarnation(ctx context.Context, name, reason string) (store.Incarnation, error) {
	var out store.Incarnation
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/unlock", nil, UnlockRequest{Reason: reason}, &out)
}

// UpgradeMigrate upgrades the incarnation to ref through the migration
// scenario migrate (operator) and returns the migration run's apply_id.
func (c *Client) UpgradeMigrate(ctx context.Context, name, ref, migrate string) (string, error) {
	var out Accepted
	err := c.Do(ctx, http.MethodPost, incPath(name)+"/upgrade", nil, UpgradeRequest{Ref: ref, Migrate: migrate}, &out)
	return out.ApplyID, err
}

// UpgradeIncarnation pins the incarnation to the commit ref points at now
// (operator).
func (c *Client) UpgradeIncarnation(ctx context.Context, name, ref string) (store.Incarnation, error) {
	var out store.Incarnation
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/upgrade", nil, UpgradeRequest{Ref: ref}, &out)
}

// AddMembers adds souls to the membership relation (operator).
func (c *Client) AddMembers(ctx context.Context, name string, sids []string) (store.Incarnation, error) {
	var out store.Incarnation
	return out, c.Do(ctx, http.MethodPost, incPath(name)+"/members", nil, MembersRequest{SIDs: sids}, &out)
}

// RemoveMembers removes souls from the membership relation (operator).
func (c *Client) RemoveMembers(ctx context.Context, name string, sids []string) (store.Incarnation, error) {
	var out store.Incarnation
	return out, c.Do(ctx, http.MethodDelete, incPath(name)+"/members", nil, MembersRequest{SIDs: sids}, &out)
}

// DeleteIncarnation deletes an incarnation without an active run, with its
// runs and history (operator).
func (c *Client) DeleteIncarnation(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, incPath(name), nil, nil, nil)
}

func incPath(name string) string { return "/v1/incarnations/" + url.PathEscape(name) }
