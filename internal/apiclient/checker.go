package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/soulstack/soulstack/internal/store"
)

// PutProcedureRequest is the body of PUT /v1/procedures/{name}: the
// procedure's YAML.
type PutProcedureRequest struct {
	Source string `json:"source"`
}

// ExecuteRequest is the body of POST /v1/procedures/{name}/execute.
// A scalar var given an array fans out: one task per element.
type ExecuteRequest struct {
	Vars map[string]any `json:"vars,omitempty"`
}

// ExecuteResponse lists the tasks an execute started.
type ExecuteResponse struct {
	TaskIDs []string            `json:"task_ids"`
	Tasks   []store.CheckerTask `json:"tasks"`
}

// CreateScheduleRequest is the body of POST /v1/schedules.
type CreateScheduleRequest struct {
	Procedure string         `json:"procedure"`
	Vars      map[string]any `json:"vars,omitempty"`
	Cron      string         `json:"cron"`
}

// PutProcedure creates or replaces a procedure (operator). An invalid
// procedure is an *APIError with code invalid whose Problems() list its
// line:col problems.
func (c *Client) PutProcedure(ctx context.Context, name, source string) (store.Procedure, error) {
	var out store.Procedure
	return out, c.Do(ctx, http.MethodPut, "/v1/procedures/"+url.PathEscape(name), nil, PutProcedureRequest{Source: source}, &out)
}

// ListProcedures lists the procedures.
func (c *Client) ListProcedures(ctx context.Context) ([]store.Procedure, error) {
	return listAll[store.Procedure](ctx, c, "/v1/procedures", nil)
}

// GetProcedure returns one procedure with its source.
func (c *Client) GetProcedure(ctx context.Context, name string) (store.Procedure, error) {
	var out store.Procedure
	return out, c.Do(ctx, http.MethodGet, "/v1/procedures/"+url.PathEscape(name), nil, nil, &out)
}

// DeleteProcedure deletes a procedure no schedule uses (operator).
func (c *Client) DeleteProcedure(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/procedures/"+url.PathEscape(name), nil, nil, nil)
}

// ExecuteProcedure starts a procedure's task(s) (operator).
func (c *Client) ExecuteProcedure(ctx context.Context, name string, vars map[string]any) (ExecuteResponse, error) {
	var out ExecuteResponse
	return out, c.Do(ctx, http.MethodPost, "/v1/procedures/"+url.PathEscape(name)+"/execute", nil, ExecuteRequest{Vars: vars}, &out)
}

// ListCheckerTasks lists tasks, newest first, of procedure ("" = all);
// limit 0 lets the Keeper choose.
func (c *Client) ListCheckerTasks(ctx context.Context, procedure string, limit int) ([]store.CheckerTask, error) {
	q := url.Values{}
	if procedure != "" {
		q.Set("procedure", procedure)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []store.CheckerTask
	return out, c.Do(ctx, http.MethodGet, "/v1/tasks", q, nil, &out)
}

// GetCheckerTask returns a task with its step log.
func (c *Client) GetCheckerTask(ctx context.Context, id string) (store.CheckerTask, error) {
	var out store.CheckerTask
	return out, c.Do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), nil, nil, &out)
}

// CancelCheckerTask cancels a running task (operator); it ends CANCELLED.
func (c *Client) CancelCheckerTask(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(id)+"/cancel", nil, nil, nil)
}

// CreateSchedule schedules a procedure on a cron expression (operator).
func (c *Client) CreateSchedule(ctx context.Context, req CreateScheduleRequest) (store.Schedule, error) {
	var out store.Schedule
	return out, c.Do(ctx, http.MethodPost, "/v1/schedules", nil, req, &out)
}

// ListSchedules lists the schedules.
func (c *Client) ListSchedules(ctx context.Context) ([]store.Schedule, error) {
	return listAll[store.Schedule](ctx, c, "/v1/schedules", nil)
}

// DeleteSchedule deletes a schedule (operator).
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/schedules/"+url.PathEscape(id), nil, nil, nil)
}
