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

	"github.com/soulstack/soulstack/internal/apitypes"
)

// GetRun returns a run with the results of all its hosts, read a page of
// 1,000 hosts at a time and merged.
func (c *Client) GetRun(ctx context.Context, applyID string) (apitypes.RunDetail, error) {
	out, err := c.GetRunPage(ctx, applyID, "", 1000)
	for err == nil && out.Next != "" {
		var next apitypes.RunDetail
		if next, err = c.GetRunPage(ctx, applyID, out.Next, 1000); err != nil {
			break
		}
		at := map[string]int{}
		for i, t := range out.Tasks {
			at[t.Path+"\x00"+t.Name] = i
		}
		for _, t := range next.Tasks {
			if i, ok := at[t.Path+"\x00"+t.Name]; ok {
				out.Tasks[i].Hosts = append(out.Tasks[i].Hosts, t.Hosts...)
				out.Tasks[i].Counts = t.Counts
				continue
			}
			out.Tasks = append(out.Tasks, t) // a task that reported meanwhile
		}
		out.Hosts, out.Next = next.Hosts, next.Next
	}
	return out, err
}

// GetRunPage returns a run with the results of one page of its hosts: at
// most limit (<= 0: the server's default of 100) whose SID sorts after
// after; the answer's Next is the after of the next page.
func (c *Client) GetRunPage(ctx context.Context, applyID, after string, limit int) (apitypes.RunDetail, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out apitypes.RunDetail
	return out, c.Do(ctx, http.MethodGet, runPath(applyID), q, nil, &out)
}

// ListRuns lists runs, newest first: of one incarnation ("" = all), at most
// limit (<= 0: the server's default).
func (c *Client) ListRuns(ctx context.Context, incarnation string, limit int) ([]apitypes.Run, error) {
	q := url.Values{}
	if incarnation != "" {
		q.Set("incarnation", incarnation)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []apitypes.Run
	return out, c.Do(ctx, http.MethodGet, "/v1/runs", q, nil, &out)
}

// CancelRun cancels a running run (operator); it ends cancelled and its
// incarnation error_locked (unless it is a check run).
func (c *Client) CancelRun(ctx context.Context, applyID string) error {
	return c.Do(ctx, http.MethodPost, runPath(applyID)+"/cancel", nil, nil, nil)
}

// ResumeRun resumes a failed, cancelled or aborted run (operator) and
// returns the new run's apply_id.
func (c *Client) ResumeRun(ctx context.Context, applyID string, req apitypes.ResumeRequest) (string, error) {
	var out apitypes.Accepted
	err := c.Do(ctx, http.MethodPost, runPath(applyID)+"/resume", nil, req, &out)
	return out.ApplyID, err
}

// WatchRun streams the run's live events to fn until the done event (which
// fn receives too), the stream ends or ctx ends. It returns the done event;
// when the stream ended without one (a keeper restart, a cut connection)
// the error says so and the caller should read the run with GetRun.
func (c *Client) WatchRun(ctx context.Context, applyID string, fn func(apitypes.RunEvent)) (apitypes.RunEvent, error) {
	body, err := c.OpenStream(ctx, runPath(applyID)+"/events", nil)
	if err != nil {
		return apitypes.RunEvent{}, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && len(data) > 0:
			var ev apitypes.RunEvent
			if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &ev); err != nil {
				return apitypes.RunEvent{}, fmt.Errorf("run %s events: %w", applyID, err)
			}
			data = nil
			if fn != nil {
				fn(ev)
			}
			if ev.Type == apitypes.RunEventDone {
				return ev, nil
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return apitypes.RunEvent{}, fmt.Errorf("run %s events: %w", applyID, err)
	}
	if ctx.Err() != nil {
		return apitypes.RunEvent{}, ctx.Err()
	}
	return apitypes.RunEvent{}, fmt.Errorf("run %s events: the stream ended before the run did", applyID)
}

func runPath(id string) string { return "/v1/runs/" + url.PathEscape(id) }
