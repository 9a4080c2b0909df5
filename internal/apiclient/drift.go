package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// DriftRequest is the body of POST /v1/incarnations/{name}/drift: the
// scenario to check ("" = create).
type DriftRequest struct {
	Scenario string `json:"scenario,omitempty"`
}

// DriftSchedule is an incarnation's periodic drift check: the body of PUT
// /v1/incarnations/{name}/drift/schedule and part of Drift.
type DriftSchedule struct {
	Scenario string   `json:"scenario,omitempty"`
	Every    Duration `json:"every"`
}

// Drift is GET /v1/incarnations/{name}/drift: the drift schedule (none:
// null) and the last drift report (none yet: null).
type Drift struct {
	Incarnation string             `json:"incarnation"`
	Schedule    *DriftSchedule     `json:"schedule"`
	Report      *store.DriftReport `json:"report"`
}

// DriftOf is the wire form of a stored drift record.
func DriftOf(d store.Drift) Drift {
	out := Drift{Incarnation: d.Incarnation, Report: d.Report}
	if d.Schedule != nil {
		out.Schedule = &DriftSchedule{Scenario: d.Schedule.Scenario, Every: Duration(d.Schedule.Every)}
	}
	return out
}

// CheckDrift starts a drift check of the incarnation (operator) and
// returns its apply_id.
func (c *Client) CheckDrift(ctx context.Context, name, scenario string) (string, error) {
	var out Accepted
	err := c.Do(ctx, http.MethodPost, incPath(name)+"/drift", nil, DriftRequest{Scenario: scenario}, &out)
	return out.ApplyID, err
}

// GetDrift returns the incarnation's drift schedule and last report.
func (c *Client) GetDrift(ctx context.Context, name string) (Drift, error) {
	var out Drift
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/drift", nil, nil, &out)
}

// SetDriftSchedule sets the incarnation's drift schedule (operator).
func (c *Client) SetDriftSchedule(ctx context.Context, name, scenario string, every time.Duration) (Drift, error) {
	var out Drift
	return out, c.Do(ctx, http.MethodPut, incPath(name)+"/drift/schedule", nil, DriftSchedule{Scenario: scenario, Every: Duration(every)}, &out)
}

// DeleteDriftSchedule removes the incarnation's drift schedule (operator).
func (c *Client) DeleteDriftSchedule(ctx context.Context, name string) (Drift, error) {
	var out Drift
	return out, c.Do(ctx, http.MethodDelete, incPath(name)+"/drift/schedule", nil, nil, &out)
}

// Trigger is one pending onchanges trigger (SPEC §8.3): the handler owed
// to a host since the run that left it.
type Trigger = store.PendingTrigger

// ListTriggers lists the incarnation's pending triggers (GET
// /v1/incarnations/{name}/triggers), by scenario, task and host.
func (c *Client) ListTriggers(ctx context.Context, name, scenario string) ([]Trigger, error) {
	q := url.Values{}
	if scenario != "" {
		q.Set("scenario", scenario)
	}
	var out []Trigger
	return out, c.Do(ctx, http.MethodGet, incPath(name)+"/triggers", q, nil, &out)
}
