package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestDriftAPI: a drift check through the API, its report, its metrics
// and its schedule; the incarnation's pending triggers.
func TestDriftAPI(t *testing.T) {
	e := newEnv(t)
	e.fleet()
	ctx := context.Background()
	op, viewer := e.client(auth.RoleOperator), e.client(auth.RoleViewer)
	acc, err := op.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "w", Service: "web", Covens: []string{"web"}, Input: map[string]any{"banner": "managed"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRun(acc.ApplyID)

	d, err := viewer.GetDrift(ctx, "w")
	if err != nil || d.Report != nil || d.Schedule != nil {
		t.Fatalf("drift before any check: %+v %v", d, err)
	}
	if _, err := viewer.CheckDrift(ctx, "w", ""); !apiclient.IsCode(err, domain.CodeForbidden) {
		t.Errorf("viewer checking drift: %v", err)
	}
	e.sim.SetStubs([]dispatch.Stub{{Module: "core.file.present", Hosts: []string{"b"}, Results: []domain.Result{{Changed: true, Diff: "-edited\n+managed"}}}})
	id, err := op.CheckDrift(ctx, "w", "")
	if err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun(id); !run.Drift || !run.Check || run.Input["banner"] != "managed" {
		t.Errorf("drift run: %+v", run)
	}
	d, err = viewer.GetDrift(ctx, "w")
	if err != nil || d.Report == nil || !d.Report.Drifted || d.Report.Tasks != 1 || d.Report.Hosts["b"].Status != store.DriftDrifted ||
		d.Report.Hosts["a"].Status != store.DriftClean || !strings.Contains(d.Report.Hosts["b"].Tasks[0].Diff, "edited") {
		t.Fatalf("drift report: %+v %v", d.Report, err)
	}
	if inc, _ := viewer.GetIncarnation(ctx, "w"); inc.Status != store.IncarnationReady {
		t.Errorf("drift changed the status: %s", inc.Status)
	}
	_, metrics := e.do("GET", "/metrics", "", "")
	for _, want := range []string{`soulstack_incarnation_drifted{incarnation="w"} 1`, `soulstack_incarnation_drift_tasks{incarnation="w"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	st, body := e.do("POST", "/v1/incarnations/w/drift", e.tokens[auth.RoleOperator], `{"scenario":"nope"}`)
	e.wantError("POST", "/v1/incarnations/{name}/drift", http.StatusBadRequest, "invalid", body, st)

	// The schedule: at least a minute, a known scenario.
	st, body = e.do("PUT", "/v1/incarnations/w/drift/schedule", e.tokens[auth.RoleOperator], `{"every":"30s"}`)
	e.wantError("PUT", "/v1/incarnations/{name}/drift/schedule", http.StatusBadRequest, "invalid", body, st)
	if _, err := op.SetDriftSchedule(ctx, "w", "nope", time.Hour); !apiclient.IsCode(err, domain.CodeInvalid) {
		t.Errorf("schedule of an unknown scenario: %v", err)
	}
	d, err = op.SetDriftSchedule(ctx, "w", "", 6*time.Hour)
	if err != nil || d.Schedule == nil || d.Schedule.Scenario != "create" || time.Duration(d.Schedule.Every) != 6*time.Hour || d.Report == nil {
		t.Fatalf("set schedule: %+v %v", d, err)
	}
	st, body = e.do("GET", "/v1/incarnations/w/drift", e.tokens[auth.RoleViewer], "")
	if st != http.StatusOK || !strings.Contains(string(body), `"every":"6h0m0s"`) {
		t.Errorf("drift JSON: %d %s", st, body)
	}
	if d, err = op.DeleteDriftSchedule(ctx, "w"); err != nil || d.Schedule != nil || d.Report == nil {
		t.Errorf("delete schedule: %+v %v", d, err)
	}
	if _, err := viewer.GetDrift(ctx, "nope"); !apiclient.IsCode(err, domain.CodeNotFound) {
		t.Errorf("drift of an unknown incarnation: %v", err)
	}

	// Pending triggers are visible.
	ts, err := viewer.ListTriggers(ctx, "w", "")
	if err != nil || len(ts) != 0 {
		t.Fatalf("triggers: %v %v", ts, err)
	}
	if err := e.st.AddTriggers(ctx, []store.PendingTrigger{{Incarnation: "w", Scenario: "create", Task: "restart", SID: "a", RunID: id}}); err != nil {
		t.Fatal(err)
	}
	ts, err = viewer.ListTriggers(ctx, "w", "create")
	if err != nil || len(ts) != 1 || ts[0].Task != "restart" || ts[0].SID != "a" || ts[0].RunID != id {
		t.Errorf("triggers: %+v %v", ts, err)
	}
	if ts, _ := viewer.ListTriggers(ctx, "w", "other"); len(ts) != 0 {
		t.Errorf("triggers of another scenario: %v", ts)
	}
}
