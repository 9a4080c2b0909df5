package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestResumeRun is POST /v1/runs/{apply_id}/resume: operators only, a
// reason required and audited, 202 with the new run linked to the old;
// a run that cannot be resumed is a 409 saying why.
func TestResumeRun(t *testing.T) {
	e := newEnv(t)
	e.fleet()
	ctx := context.Background()
	op, viewer := e.client(auth.RoleOperator), e.client(auth.RoleViewer)
	acc, err := op.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "w", Service: "web", Covens: []string{"web"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRun(acc.ApplyID)
	e.sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Hosts: []string{"b"}, Results: []domain.Result{{Failed: true, RC: 1, Msg: "drain failed"}}}})
	acc, err = op.StartRun(ctx, "w", apitypes.StartRunRequest{Scenario: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	failed := e.waitRun(acc.ApplyID)
	if failed.Status != store.RunFailed {
		t.Fatalf("slow run: %s", failed.Status)
	}

	if _, err := viewer.ResumeRun(ctx, failed.ID, apitypes.ResumeRequest{Reason: "x"}); !apiclient.IsCode(err, domain.CodeForbidden) {
		t.Errorf("viewer resuming: %v, want forbidden", err)
	}
	st, body := e.do("POST", "/v1/runs/"+failed.ID+"/resume", e.tokens[auth.RoleOperator], `{"reason":" "}`)
	e.wantError("POST", "/v1/runs/{apply_id}/resume", http.StatusBadRequest, "invalid", body, st)
	st, body = e.do("POST", "/v1/runs/nope/resume", e.tokens[auth.RoleOperator], `{"reason":"x"}`)
	e.wantError("POST", "/v1/runs/{apply_id}/resume", http.StatusNotFound, "not_found", body, st)

	e.sim.SetStubs(nil)
	st, body = e.do("POST", "/v1/runs/"+failed.ID+"/resume", e.tokens[auth.RoleOperator], `{"reason":"drained b by hand"}`)
	if st != http.StatusAccepted || !strings.Contains(string(body), `"apply_id"`) {
		t.Fatalf("resume: %d %s", st, body)
	}
	runs, err := viewer.ListRuns(ctx, "w", 1)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	resumed := e.waitRun(runs[0].ID)
	if resumed.Status != store.RunSucceeded || resumed.ResumedFrom != failed.ID {
		t.Fatalf("resumed run: %+v", resumed)
	}
	detail, err := viewer.GetRun(ctx, resumed.ID)
	if err != nil || detail.ResumedFrom != failed.ID {
		t.Errorf("run detail: %+v %v", detail.Run, err)
	}
	audit, err := e.st.ListAudit(ctx, store.AuditFilter{Action: "POST /v1/runs/{apply_id}/resume"})
	if err != nil || len(audit) == 0 || audit[0].Summary["reason"] != "drained b by hand" || audit[0].Target != "w/"+resumed.ID {
		t.Errorf("resume audit = %+v %v", audit, err)
	}
	// Succeeded: nothing to resume.
	st, body = e.do("POST", "/v1/runs/"+resumed.ID+"/resume", e.tokens[auth.RoleOperator], `{"reason":"again"}`)
	e.wantError("POST", "/v1/runs/{apply_id}/resume", http.StatusConflict, "conflict", body, st)
	if !strings.Contains(string(body), "only a failed, cancelled or aborted run") {
		t.Errorf("conflict message: %s", body)
	}
}
