package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// RunDetail is GET /v1/runs/{apply_id}: the run and its tasks × hosts
// results in task order.
type RunDetail struct {
	store.Run
	Tasks []RunTask `json:"tasks"`
	// Health is the health after the run when the service has after_runs
	// checks (SPEC §14.1): per host, the outcomes of those checks.
	Health []RunHealthHost `json:"health,omitempty"`
}

// RunTask is one task of a run with its per-host results, by SID.
type RunTask struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Hosts []RunHost `json:"hosts"`
	// Note says why a task that targeted no host (empty Hosts) did (SPEC
	// §6): "on: [db] matched no member of this incarnation", "where: was
	// false on every host".
	Note string `json:"note,omitempty"`
}

// RunHost is one host's result of a task. Stdout and stderr are capped by
// the Keeper (Data["truncated"] names what was cut); secrets are ****.
type RunHost struct {
	SID        string         `json:"sid"`
	Wave       int            `json:"wave"`
	Status     string         `json:"status"`
	Changed    bool           `json:"changed"`
	RC         int            `json:"rc"`
	Stdout     string         `json:"stdout"`
	Stderr     string         `json:"stderr"`
	Msg        string         `json:"msg,omitempty"`
	Diff       string         `json:"diff,omitempty"`
	DurationMS int64          `json:"duration_ms"`
	Data       map[string]any `json:"data,omitempty"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
}

// RunEvent is one Server-Sent Event of GET /v1/runs/{apply_id}/events
// (the SSE event name is Type): run (started), task (Path, Task, Hosts: its
// target), wave (Path, Wave, Hosts), host (Result: one host's result of a
// task as it is stored; it comes again when failed_when changes it at the
// task's barrier) and done (Status, Error), always the last. A subscriber
// that connects mid-run first gets the events it missed (of a very large
// run, the first few hundred: the rest is in GET /v1/runs/{apply_id}).
type RunEvent struct {
	Type   string            `json:"type"`
	RunID  string            `json:"apply_id"`
	Time   time.Time         `json:"time"`
	Status string            `json:"status,omitempty"`
	Error  string            `json:"error,omitempty"`
	Path   string            `json:"path,omitempty"`
	Task   string            `json:"task,omitempty"`
	Wave   int               `json:"wave,omitempty"`
	Hosts  []string          `json:"hosts,omitempty"`
	Result *store.HostResult `json:"result,omitempty"`
}

// RunEventDone is the Type of the last event of a run's stream.
const RunEventDone = "done"

// GetRun returns a run with its results.
func (c *Client) GetRun(ctx context.Context, applyID string) (RunDetail, error) {
	var out RunDetail
	return out, c.Do(ctx, http.MethodGet, runPath(applyID), nil, nil, &out)
}

// ListRuns lists runs, newest first: of one incarnation ("" = all), at most
// limit (<= 0: the server's default).
func (c *Client) ListRuns(ctx context.Context, incarnation string, limit int) ([]store.Run, error) {
	q := url.Values{}
	if incarnation != "" {
		q.Set("incarnation", incarnation)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []store.Run
	return out, c.Do(ctx, http.MethodGet, "/v1/runs", q, nil, &out)
}

// CancelRun cancels a running run (operator); it ends cancelled and its
// incarnation error_locked (unless it is a check run).
func (c *Client) CancelRun(ctx context.Context, applyID string) error {
	return c.Do(ctx, http.MethodPost, runPath(applyID)+"/cancel", nil, nil, nil)
}

// ResumeRequest is the body of POST /v1/runs/{apply_id}/resume (SPEC
// §8.8): the reason is required and audited (the resume unlocks the
// incarnation); Input gives again the values of the run's secret inputs,
// which it stored masked.
type ResumeRequest struct {
	Reason string         `json:"reason"`
	Input  map[string]any `json:"input,omitempty"`
}

// ResumeRun resumes a failed, cancelled or aborted run (operator) and
// returns the new run's apply_id.
func (c *Client) ResumeRun(ctx context.Context, applyID string, req ResumeRequest) (string, error) {
	var out Accepted
	err := c.Do(ctx, http.MethodPost, runPath(applyID)+"/resume", nil, req, &out)
	return out.ApplyID, err
}

// WatchRun streams the run's live events to fn until the done event (which
// fn receives too), the stream ends or ctx ends. It returns the done event;
// when the stream ended without one (a keeper restart, a cut connection)
// the error says so and the caller should read the run with GetRun.
func (c *Client) WatchRun(ctx context.Context, applyID string, fn func(RunEvent)) (RunEvent, error) {
	body, err := c.OpenStream(ctx, runPath(applyID)+"/events", nil)
	if err != nil {
		return RunEvent{}, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && len(data) > 0:
			var ev RunEvent
			if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &ev); err != nil {
				return RunEvent{}, fmt.Errorf("run %s events: %w", applyID, err)
			}
			data = nil
			if fn != nil {
				fn(ev)
			}
			if ev.Type == RunEventDone {
				return ev, nil
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return RunEvent{}, fmt.Errorf("run %s events: %w", applyID, err)
	}
	if ctx.Err() != nil {
		return RunEvent{}, ctx.Err()
	}
	return RunEvent{}, fmt.Errorf("run %s events: the stream ended before the run did", applyID)
}

func runPath(id string) string { return "/v1/runs/" + url.PathEscape(id) }
