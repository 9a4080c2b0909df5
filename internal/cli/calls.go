package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
)

// The incarnation and run routes are called through Client.Do with
// apiclient's wire types. Every call keeps the answer's raw JSON, which is
// what -o json|yaml prints and Exec returns, so every field the API sends
// reaches users unchanged; the typed views below only feed the tables.

// incarnationView is the table view of GET /v1/incarnations/{name}.
type incarnationView = apitypes.Incarnation

// snapshotView is one entry of GET /v1/incarnations/{name}/history.
type snapshotView = apitypes.Snapshot

// runView is the table view of GET /v1/runs/{apply_id}: the run and its
// tasks × hosts results.
type runView struct {
	ApplyID     string     `json:"apply_id"`
	Incarnation string     `json:"incarnation"`
	Scenario    string     `json:"scenario"`
	Check       bool       `json:"check"`
	Status      string     `json:"status"`
	Error       string     `json:"error"`
	ResumedFrom string     `json:"resumed_from"`
	Drift       bool       `json:"drift"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	Tasks       []taskView `json:"tasks"`
	// Hosts is how many hosts reported; Tasks hold one page of them, Next
	// names the next page.
	Hosts int    `json:"hosts"`
	Next  string `json:"next"`
}

// taskView is one task of a run with its per-host results.
type taskView struct {
	Name  string     `json:"name"`
	Path  string     `json:"path"`
	Hosts []hostView `json:"hosts"`
	// Note says why a task that targeted no host did (SPEC §6).
	Note string `json:"note"`
	// Counts sums the task over all hosts, not only the page's.
	Counts *apitypes.RunTaskCounts `json:"counts"`
}

// hostView is one host's result of a task.
type hostView struct {
	SID        string    `json:"sid"`
	Wave       int       `json:"wave"`
	Status     string    `json:"status"`
	Changed    bool      `json:"changed"`
	RC         int       `json:"rc"`
	Stdout     string    `json:"stdout"`
	Stderr     string    `json:"stderr"`
	Msg        string    `json:"msg"`
	DurationMS int64     `json:"duration_ms"`
	StartedAt  time.Time `json:"started_at"`
	// Data holds module-specific fields; delegated_to lists the hosts a
	// delegated task ran on for this one.
	Data map[string]any `json:"data,omitempty"`
}

// hostLabel is how a result's host is shown: its SID, and for a task run
// by delegates (delegate:), "sid → delegate, …".
func hostLabel(h hostView) string {
	ds, ok := h.Data["delegated_to"].([]any)
	if !ok || len(ds) == 0 {
		return h.SID
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = fmt.Sprint(d)
	}
	return h.SID + " → " + strings.Join(names, ",")
}

// terminalRun reports whether a run status is final.
func terminalRun(status string) bool {
	switch status {
	case apitypes.RunSucceeded, apitypes.RunFailed, apitypes.RunAborted, apitypes.RunCancelled:
		return true
	}
	return false
}

// accepted is the 202 answer of a call that starts a run.
type accepted = apitypes.Accepted

// raw is an API answer kept as JSON with its typed view.
type raw[T any] struct {
	JSON json.RawMessage
	View T
}

// call performs a request and keeps both forms of the answer.
func call[T any](ctx context.Context, cl *apiclient.Client, method, path string, q url.Values, in any) (raw[T], error) {
	var r raw[T]
	if err := cl.Do(ctx, method, path, q, in, &r.JSON); err != nil {
		return r, err
	}
	if len(r.JSON) == 0 {
		r.JSON = json.RawMessage("{}")
	}
	if err := json.Unmarshal(r.JSON, &r.View); err != nil {
		return r, fmt.Errorf("decoding %s %s answer: %w", method, path, err)
	}
	return r, nil
}

func incPath(name string, rest ...string) string {
	p := "/v1/incarnations/" + url.PathEscape(name)
	for _, s := range rest {
		p += "/" + s
	}
	return p
}

func createIncarnation(ctx context.Context, cl *apiclient.Client, req apitypes.CreateIncarnationRequest) (raw[accepted], error) {
	return call[accepted](ctx, cl, http.MethodPost, "/v1/incarnations", nil, req)
}

func listIncarnations(ctx context.Context, cl *apiclient.Client) (raw[[]incarnationView], error) {
	return call[[]incarnationView](ctx, cl, http.MethodGet, "/v1/incarnations", nil, nil)
}

func getIncarnation(ctx context.Context, cl *apiclient.Client, name string) (raw[incarnationView], error) {
	return call[incarnationView](ctx, cl, http.MethodGet, incPath(name), nil, nil)
}

func incarnationHistory(ctx context.Context, cl *apiclient.Client, name string, limit int) (raw[[]snapshotView], error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[[]snapshotView](ctx, cl, http.MethodGet, incPath(name, "history"), q, nil)
}

func startRun(ctx context.Context, cl *apiclient.Client, name string, req apitypes.StartRunRequest) (raw[accepted], error) {
	return call[accepted](ctx, cl, http.MethodPost, incPath(name, "runs"), nil, req)
}

func unlockIncarnation(ctx context.Context, cl *apiclient.Client, name, reason string) (raw[incarnationView], error) {
	return call[incarnationView](ctx, cl, http.MethodPost, incPath(name, "unlock"), nil, apitypes.UnlockRequest{Reason: reason})
}

func upgradeIncarnation(ctx context.Context, cl *apiclient.Client, name, ref string) (raw[incarnationView], error) {
	return call[incarnationView](ctx, cl, http.MethodPost, incPath(name, "upgrade"), nil, apitypes.UpgradeRequest{Ref: ref})
}

// listRuns lists runs, newest first, of one incarnation ("" = all).
func listRuns(ctx context.Context, cl *apiclient.Client, incarnation string, limit int) (raw[[]runView], error) {
	q := url.Values{}
	if incarnation != "" {
		q.Set("incarnation", incarnation)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[[]runView](ctx, cl, http.MethodGet, "/v1/runs", q, nil)
}

func deleteIncarnation(ctx context.Context, cl *apiclient.Client, name string, destroy bool) (raw[map[string]any], error) {
	var q url.Values
	if destroy {
		q = url.Values{"destroy": {"true"}}
	}
	return call[map[string]any](ctx, cl, http.MethodDelete, incPath(name), q, nil)
}

// changeMembers adds (POST) or removes (DELETE) members by SID.
func changeMembers(ctx context.Context, cl *apiclient.Client, method, name string, sids []string) (raw[incarnationView], error) {
	return call[incarnationView](ctx, cl, method, incPath(name, "members"), nil, apitypes.MembersRequest{SIDs: sids})
}

func getRun(ctx context.Context, cl *apiclient.Client, id string) (raw[runView], error) {
	return getRunPage(ctx, cl, id, "", 0)
}

// getRunPage reads a run with one page of its hosts (limit 0: the
// Keeper's default).
func getRunPage(ctx context.Context, cl *apiclient.Client, id, after string, limit int) (raw[runView], error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[runView](ctx, cl, http.MethodGet, "/v1/runs/"+url.PathEscape(id), q, nil)
}

func cancelRun(ctx context.Context, cl *apiclient.Client, id string) (raw[map[string]any], error) {
	return call[map[string]any](ctx, cl, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/cancel", nil, nil)
}
