package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// PutProcedure creates or replaces a procedure (operator). An invalid
// procedure is an *APIError with code invalid whose Problems() list its
// line:col problems.
func (c *Client) PutProcedure(ctx context.Context, name, source string) (apitypes.Procedure, error) {
	var out apitypes.Procedure
	return out, c.Do(ctx, http.MethodPut, "/v1/procedures/"+url.PathEscape(name), nil, apitypes.PutProcedureRequest{Source: source}, &out)
}

// ListProcedures lists the procedures.
func (c *Client) ListProcedures(ctx context.Context) ([]apitypes.Procedure, error) {
	return listAll[apitypes.Procedure](ctx, c, "/v1/procedures", nil)
}

// GetProcedure returns one procedure with its source.
func (c *Client) GetProcedure(ctx context.Context, name string) (apitypes.Procedure, error) {
	var out apitypes.Procedure
	return out, c.Do(ctx, http.MethodGet, "/v1/procedures/"+url.PathEscape(name), nil, nil, &out)
}

// DeleteProcedure deletes a procedure no schedule uses (operator).
func (c *Client) DeleteProcedure(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/procedures/"+url.PathEscape(name), nil, nil, nil)
}

// ExecuteProcedure starts a procedure's task(s) (operator).
func (c *Client) ExecuteProcedure(ctx context.Context, name string, vars map[string]any) (apitypes.ExecuteResponse, error) {
	var out apitypes.ExecuteResponse
	return out, c.Do(ctx, http.MethodPost, "/v1/procedures/"+url.PathEscape(name)+"/execute", nil, apitypes.ExecuteRequest{Vars: vars}, &out)
}

// ListCheckerTasks lists tasks, newest first, of procedure ("" = all);
// limit 0 lets the Keeper choose.
func (c *Client) ListCheckerTasks(ctx context.Context, procedure string, limit int) ([]apitypes.CheckerTask, error) {
	q := url.Values{}
	if procedure != "" {
		q.Set("procedure", procedure)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []apitypes.CheckerTask
	return out, c.Do(ctx, http.MethodGet, "/v1/tasks", q, nil, &out)
}

// GetCheckerTask returns a task with its step log.
func (c *Client) GetCheckerTask(ctx context.Context, id string) (apitypes.CheckerTask, error) {
	var out apitypes.CheckerTask
	return out, c.Do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), nil, nil, &out)
}

// CancelCheckerTask cancels a running task (operator); it ends CANCELLED.
func (c *Client) CancelCheckerTask(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(id)+"/cancel", nil, nil, nil)
}

// CreateSchedule schedules a procedure on a cron expression (operator).
func (c *Client) CreateSchedule(ctx context.Context, req apitypes.CreateScheduleRequest) (apitypes.Schedule, error) {
	var out apitypes.Schedule
	return out, c.Do(ctx, http.MethodPost, "/v1/schedules", nil, req, &out)
}

// ListSchedules lists the schedules.
func (c *Client) ListSchedules(ctx context.Context) ([]apitypes.Schedule, error) {
	return listAll[apitypes.Schedule](ctx, c, "/v1/schedules", nil)
}

// DeleteSchedule deletes a schedule (operator).
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/schedules/"+url.PathEscape(id), nil, nil, nil)
}
