package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// webService is a service repository with a create scenario that commits
// state, and a scenario whose command the tests make hang.
var webService = map[string]string{
	"service.yml": `name: web
state_schema:
  type: object
  properties:
    banner: {type: string}
`,
	"scenario/create/main.yml": `
input:
  banner: {type: string, default: hello}
  token: {type: string, secret: true, default: s3cr3t-token}
state_changes:
  sets: {banner: "${ input.banner }"}
tasks:
  - name: motd
    module: core.file.present
    params: {path: /etc/motd, content: "${ input.banner }"}
`,
	"scenario/slow/main.yml": `
tasks:
  - name: drain
    module: core.exec.run
    params: {command: drain --wait}
`,
}

// fleet registers the service and three souls (a and b in coven web, c
// elsewhere) known to the simulated transport; it returns the repo.
func (e *env) fleet() *catalogtest.Repo {
	e.t.Helper()
	ctx := context.Background()
	repo := catalogtest.NewRepo(e.t)
	repo.Commit(webService, "v1")
	if _, err := e.client(auth.RoleAdmin).RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "web", Git: repo.Dir, Ref: "master"}); err != nil {
		e.t.Fatal(err)
	}
	for sid, covens := range map[string][]string{"a": {"web"}, "b": {"web"}, "c": {"db"}} {
		if err := e.st.UpsertSoul(ctx, store.Soul{SID: sid, Status: store.SoulConnected, Covens: covens}); err != nil {
			e.t.Fatal(err)
		}
		e.sim.AddHost(dispatch.SimHost{SID: sid})
	}
	return repo
}

func (e *env) waitRun(id string) store.Run {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := e.eng.Wait(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return run
}

func TestIncarnationLifecycle(t *testing.T) {
	e := newEnv(t)
	repo := e.fleet()
	ctx := context.Background()
	op, viewer := e.client(auth.RoleOperator), e.client(auth.RoleViewer)

	req := apitypes.CreateIncarnationRequest{Name: "web-prod", Service: "web", Covens: []string{"web"}, Input: map[string]any{"banner": "managed"}}
	if _, err := viewer.CreateIncarnation(ctx, req); !apiclient.IsCode(err, domain.CodeForbidden) {
		t.Fatalf("viewer creating: %v, want forbidden", err)
	}
	st, body := e.do("POST", "/v1/incarnations", e.tokens[auth.RoleOperator], `{"name":"web-prod","service":"web","covens":["web"],"input":{"banner":"managed"}}`)
	if st != http.StatusAccepted || !strings.Contains(string(body), `"apply_id"`) {
		t.Fatalf("create: %d %s", st, body)
	}
	runs, err := viewer.ListRuns(ctx, "web-prod", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	if run := e.waitRun(runs[0].ID); run.Status != store.RunSucceeded {
		t.Fatalf("create run %s: %s", run.Status, run.Error)
	}
	inc, err := viewer.GetIncarnation(ctx, "web-prod")
	if err != nil {
		t.Fatal(err)
	}
	if inc.Status != store.IncarnationReady || inc.State["banner"] != "managed" || strings.Join(inc.Members, ",") != "a,b" || len(inc.Commit) != 40 {
		t.Errorf("incarnation = %+v", inc)
	}
	if inc.Input["token"] != "****" {
		t.Errorf("stored creation input shows the secret: %v", inc.Input)
	}
	hist, err := viewer.IncarnationHistory(ctx, "web-prod", 10)
	if err != nil || len(hist) != 1 || hist[0].State["banner"] != "managed" || hist[0].Summary["hosts"] != 2.0 {
		t.Errorf("history = %+v %v", hist, err)
	}
	if list, err := viewer.ListIncarnations(ctx); err != nil || len(list) != 1 {
		t.Errorf("list = %v %v", list, err)
	}

	// Input the scenario does not declare is a 400 before anything runs.
	if _, err := op.StartRun(ctx, "web-prod", apitypes.StartRunRequest{Scenario: "create", Input: map[string]any{"nope": 1}}); !apiclient.IsCode(err, domain.CodeInvalid) {
		t.Errorf("bad input: %v, want invalid", err)
	}
	if _, err := op.StartRun(ctx, "nope", apitypes.StartRunRequest{Scenario: "create"}); !apiclient.IsCode(err, domain.CodeNotFound) {
		t.Errorf("unknown incarnation: %v, want not found", err)
	}

	// Members: only accepted souls; not while a run is active.
	if _, err := op.AddMembers(ctx, "web-prod", []string{"ghost"}); !apiclient.IsCode(err, domain.CodeInvalid) {
		t.Errorf("adding an unknown soul: %v, want invalid", err)
	}
	if inc, err := op.AddMembers(ctx, "web-prod", []string{"c"}); err != nil || strings.Join(inc.Members, ",") != "a,b,c" {
		t.Errorf("add c: %v %v", inc.Members, err)
	}
	if inc, err := op.RemoveMembers(ctx, "web-prod", []string{"c"}); err != nil || strings.Join(inc.Members, ",") != "a,b" {
		t.Errorf("remove c: %v %v", inc.Members, err)
	}

	// Upgrade pins the commit the ref points at now, validated first. It
	// is an admin's decision (audit M3): an operator is refused.
	c2 := repo.Commit(map[string]string{"scenario/create/main.yml": webService["scenario/create/main.yml"] + "\n# v2\n"}, "v2")
	if _, err := op.UpgradeIncarnation(ctx, "web-prod", "master"); !apiclient.IsCode(err, domain.CodeForbidden) {
		t.Errorf("upgrade by an operator: %v, want forbidden", err)
	}
	adm := e.client(auth.RoleAdmin)
	if inc, err := adm.UpgradeIncarnation(ctx, "web-prod", "master"); err != nil || inc.Commit != c2 {
		t.Errorf("upgrade: %v, commit %s, want %s", err, inc.Commit, c2)
	}
	if _, err := adm.UpgradeIncarnation(ctx, "web-prod", "no-such-ref"); !apiclient.IsCode(err, domain.CodeUnprocessable) {
		t.Errorf("upgrade to a missing ref: %v, want unprocessable", err)
	}

	if err := op.DeleteIncarnation(ctx, "web-prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.GetIncarnation(ctx, "web-prod"); !apiclient.IsCode(err, domain.CodeNotFound) {
		t.Errorf("after delete: %v, want not found", err)
	}
}

func TestRunConflictCancelEventsAndUnlock(t *testing.T) {
	e := newEnv(t)
	e.fleet()
	ctx := context.Background()
	op, viewer := e.client(auth.RoleOperator), e.client(auth.RoleViewer)
	acc, err := op.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "w", Service: "web", Covens: []string{"web"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRun(acc.ApplyID)

	e.sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Hosts: []string{"b"}, Hang: true}})
	acc, err = op.StartRun(ctx, "w", apitypes.StartRunRequest{Scenario: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []apitypes.RunEvent
	watched := make(chan apitypes.RunEvent, 1)
	go func() {
		done, err := viewer.WatchRun(ctx, acc.ApplyID, func(ev apitypes.RunEvent) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		})
		if err != nil {
			t.Error(err)
		}
		watched <- done
	}()

	// One run at a time: the conflict names the active run.
	_, err = op.StartRun(ctx, "w", apitypes.StartRunRequest{Scenario: "slow"})
	var ae *apiclient.APIError
	if !apiclient.IsCode(err, domain.CodeConflict) || !errors.As(err, &ae) || string(ae.Details) != `"`+acc.ApplyID+`"` {
		t.Fatalf("second run: %v, want a conflict naming %s", err, acc.ApplyID)
	}
	waitFor(t, func() bool {
		for _, c := range e.sim.Calls() {
			if c.SID == "b" && c.Task == "drain" {
				return true
			}
		}
		return false
	})
	if err := viewer.CancelRun(ctx, acc.ApplyID); !apiclient.IsCode(err, domain.CodeForbidden) {
		t.Errorf("viewer cancelling: %v, want forbidden", err)
	}
	if err := op.CancelRun(ctx, acc.ApplyID); err != nil {
		t.Fatal(err)
	}
	done := <-watched
	if done.Type != apitypes.RunEventDone || done.Status != store.RunCancelled {
		t.Errorf("stream ended with %+v, want done/cancelled", done)
	}
	mu.Lock()
	sawHost := false
	for _, ev := range events {
		sawHost = sawHost || (ev.Type == "host" && ev.Result != nil && ev.Result.SID == "a")
	}
	mu.Unlock()
	if !sawHost {
		t.Errorf("no host event for a in %+v", events)
	}

	detail, err := viewer.GetRun(ctx, acc.ApplyID)
	if err != nil {
		t.Fatal(err)
	}
	if detail.Status != store.RunCancelled || len(detail.Tasks) != 1 || detail.Tasks[0].Name != "drain" || len(detail.Tasks[0].Hosts) != 2 {
		t.Errorf("run detail = %+v", detail)
	}
	if h := detail.Tasks[0].Hosts[1]; h.SID != "b" || h.Status != "failed" || h.Wave != 1 {
		t.Errorf("b's result = %+v", h)
	}
	// A finished run's stream is just its done event.
	if ev, err := viewer.WatchRun(ctx, acc.ApplyID, nil); err != nil || ev.Status != store.RunCancelled {
		t.Errorf("stream of a finished run: %+v %v", ev, err)
	}
	if err := op.CancelRun(ctx, acc.ApplyID); !apiclient.IsCode(err, domain.CodeConflict) {
		t.Errorf("cancelling a finished run: %v, want a conflict", err)
	}

	// error_locked refuses runs until an Archon unlocks it with a reason.
	if _, err := op.StartRun(ctx, "w", apitypes.StartRunRequest{Scenario: "create"}); !apiclient.IsCode(err, domain.CodeConflict) {
		t.Errorf("run on error_locked: %v, want a conflict", err)
	}
	if _, err := op.UnlockIncarnation(ctx, "w", " "); !apiclient.IsCode(err, domain.CodeInvalid) {
		t.Errorf("unlock without a reason: %v, want invalid", err)
	}
	inc, err := op.UnlockIncarnation(ctx, "w", "drained b by hand")
	if err != nil || inc.Status != store.IncarnationReady {
		t.Fatalf("unlock: %v %v", inc.Status, err)
	}
	audit, err := e.st.ListAudit(ctx, store.AuditFilter{Action: "POST /v1/incarnations/{name}/unlock"})
	if err != nil || len(audit) != 2 || audit[0].Summary["reason"] != "drained b by hand" || audit[0].Target != "w" {
		t.Errorf("unlock audit = %+v %v", audit, err)
	}
	if _, err := op.UnlockIncarnation(ctx, "w", "again"); !apiclient.IsCode(err, domain.CodeConflict) {
		t.Errorf("unlocking a ready incarnation: %v, want a conflict", err)
	}
	if _, err := viewer.GetRun(ctx, "nope"); !apiclient.IsCode(err, domain.CodeNotFound) {
		t.Errorf("unknown run: %v, want not found", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
