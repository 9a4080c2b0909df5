package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

const greetProc = `
vars:
  who:
    type: string
    visibility: public
  seen:
    type: array[string]
    default: []
steps:
  greet:
    conditions:
      - const: "{{ who }}"
        expect:
          - {filter: "@", op: "!=", value: ""}
    action:
      log: "hello {{ who }}"
`

// waitTask polls a task until it ends.
func waitTask(t *testing.T, c *apiclient.Client, id string) apitypes.CheckerTask {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := c.GetCheckerTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch task.Status {
		case "SUCCESS", "FAILURE", "CANCELLED", "TIMEOUT":
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", id, task.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProcedureLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op, viewer := e.client(auth.RoleOperator), e.client(auth.RoleViewer)

	if _, err := viewer.PutProcedure(ctx, "greet", greetProc); domain.ErrorCode(err) != domain.CodeForbidden {
		t.Fatalf("viewer PUT: %v, want forbidden", err)
	}
	p, err := op.PutProcedure(ctx, "greet", greetProc)
	if err != nil || p.Name != "greet" || p.Source != greetProc {
		t.Fatalf("PutProcedure: %+v, %v", p, err)
	}
	list, err := viewer.ListProcedures(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListProcedures: %v, %v", list, err)
	}

	res, err := op.ExecuteProcedure(ctx, "greet", map[string]any{"who": []any{"ann", "bob"}})
	if err != nil || len(res.TaskIDs) != 2 || len(res.Tasks) != 2 {
		t.Fatalf("ExecuteProcedure: %+v, %v", res, err)
	}
	for _, id := range res.TaskIDs {
		task := waitTask(t, viewer, id)
		if task.Status != "SUCCESS" || !strings.HasPrefix(task.Message, "hello ") || len(task.Log) == 0 {
			t.Errorf("task %s: %s %q, %d log lines", id, task.Status, task.Message, len(task.Log))
		}
	}
	tasks, err := viewer.ListCheckerTasks(ctx, "greet", 1)
	if err != nil || len(tasks) != 1 {
		t.Errorf("ListCheckerTasks limit 1: %d, %v", len(tasks), err)
	}
	if err := op.CancelCheckerTask(ctx, res.TaskIDs[0]); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("cancelling an ended task: %v, want conflict", err)
	}

	sc, err := op.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "greet", Vars: map[string]any{"who": "cron"}, Cron: "*/5 * * * *"})
	if err != nil || sc.ID == "" {
		t.Fatalf("CreateSchedule: %+v, %v", sc, err)
	}
	if err := op.DeleteProcedure(ctx, "greet"); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("deleting a scheduled procedure: %v, want conflict", err)
	}
	if ss, err := viewer.ListSchedules(ctx); err != nil || len(ss) != 1 || ss[0].Cron != "*/5 * * * *" {
		t.Errorf("ListSchedules: %+v, %v", ss, err)
	}
	if err := op.DeleteSchedule(ctx, sc.ID); err != nil {
		t.Fatal(err)
	}
	if err := op.DeleteProcedure(ctx, "greet"); err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.GetProcedure(ctx, "greet"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("deleted procedure: %v", err)
	}
}

func TestProcedureValidationErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.client(auth.RoleOperator)

	bad := strings.Replace(greetProc, `op: "!="`, `op: "=~"`, 1)
	_, err := op.PutProcedure(ctx, "greet", bad)
	var ae *apiclient.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("invalid procedure: %v, want 400", err)
	}
	ps := ae.Problems()
	if len(ps) != 1 || ps[0].File != "greet" || ps[0].Line != 14 || !strings.Contains(ps[0].Text, `greet:14:31: step greet condition 1 expect: unknown op "=~"`) {
		t.Errorf("problems %+v", ps)
	}

	if _, err := op.PutProcedure(ctx, "greet", greetProc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		code domain.Code
		want string
	}{
		{"private var", func() error {
			_, err := op.ExecuteProcedure(ctx, "greet", map[string]any{"who": "x", "seen": []any{"a"}})
			return err
		}, domain.CodeInvalid, "private"},
		{"unknown procedure", func() error { _, err := op.ExecuteProcedure(ctx, "nope", nil); return err }, domain.CodeNotFound, "nope"},
		{"bad cron", func() error {
			_, err := op.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "greet", Vars: map[string]any{"who": "x"}, Cron: "soon"})
			return err
		}, domain.CodeInvalid, "invalid cron expression"},
		{"bad limit", func() error { _, err := op.ListCheckerTasks(ctx, "", 5000); return err }, domain.CodeInvalid, "limit"},
		{"unknown task", func() error { _, err := op.GetCheckerTask(ctx, "nope"); return err }, domain.CodeNotFound, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if domain.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %s containing %q", err, tt.code, tt.want)
			}
		})
	}
}

// TestScheduleOddCronIs400: a schedule with "TZ=UTC" (which made the cron
// library panic and dropped the connection) or another odd spec is a 400
// naming the problem; a schedule with a valid time zone is created.
func TestScheduleOddCronIs400(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.client(auth.RoleOperator)
	if _, err := op.PutProcedure(ctx, "greet", greetProc); err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		"TZ=UTC":                    "without a schedule",
		"CRON_TZ=":                  "names no time zone",
		"TZ=Nowhere/City * * * * *": "unknown time zone",
		"* * * * * *":               "6 fields",
		"@every 1s":                 "at least 1m",
		"61 * * * *":                "above maximum",
	} {
		body, _ := json.Marshal(map[string]any{"procedure": "greet", "vars": map[string]any{"who": "x"}, "cron": spec})
		st, b := e.do("POST", "/v1/schedules", e.tokens[auth.RoleOperator], string(body))
		d := e.wantError("POST", "/v1/schedules "+spec, http.StatusBadRequest, "invalid", b, st)
		if !strings.Contains(d.Message, want) || !strings.Contains(d.Message, spec) {
			t.Errorf("%q: message %q, want it to quote the spec and say %q", spec, d.Message, want)
		}
	}
	sc, err := op.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "greet", Vars: map[string]any{"who": "x"}, Cron: "CRON_TZ=Europe/Paris 0 9 * * 1-5"})
	if err != nil || sc.Cron != "CRON_TZ=Europe/Paris 0 9 * * 1-5" {
		t.Errorf("a schedule with a valid zone: %+v, %v", sc, err)
	}
}
