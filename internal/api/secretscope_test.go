package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/store"
)

// TestSecretScopes (issue 34): a secret of service pg is read by pg's
// scenarios and refused to another service's at validation (400 naming
// file:line and the scope); a secret re-scoped after a run was accepted is
// refused when the run loads it; a service-scoped admin manages only its
// service's secrets, and lists only what its grants reach.
func TestSecretScopes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	if _, err := admin.SetScopedSecret(ctx, "pg_pw", "Pg-Secret-7781", "service:pg"); err != nil {
		t.Fatal(err)
	}
	scenario := "tasks:\n  - name: use\n    module: core.test.echo\n    params: {message: \"pw=${ secret(\\\"pg_pw\\\") }\"}\n"
	for _, svc := range []string{"pg", "web"} {
		repo := catalogtest.NewRepo(t)
		repo.Commit(map[string]string{"service.yml": "name: " + svc + "\n", "scenario/create/main.yml": "tasks: []\n", "scenario/use/main.yml": scenario}, "v1")
		if _, err := admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: svc, Git: repo.Dir, Ref: "master"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.UpsertSoul(ctx, store.Soul{SID: "h1", Status: store.SoulConnected, Covens: []string{"all"}}); err != nil {
		t.Fatal(err)
	}
	e.sim.AddHost(dispatch.SimHost{SID: "h1"})
	for _, inc := range []struct{ name, svc string }{{"pg-1", "pg"}, {"web-1", "web"}} {
		acc, err := admin.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: inc.name, Service: inc.svc, Covens: []string{"all"}})
		if err != nil {
			t.Fatal(err)
		}
		e.waitRun(acc.ApplyID)
	}
	op := e.tokens[auth.RoleOperator]

	// pg's scenario reads it.
	st, b := e.do("POST", "/v1/incarnations/pg-1/runs", op, `{"scenario": "use"}`)
	if st != http.StatusAccepted {
		t.Fatalf("pg run: %d %s", st, b)
	}
	var acc apitypes.Accepted
	if err := json.Unmarshal(b, &acc); err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun(acc.ApplyID); run.Status != store.RunSucceeded {
		t.Fatalf("pg run: %s %s", run.Status, run.Error)
	}
	// web's is refused at validation, naming where and why.
	st, b = e.do("POST", "/v1/incarnations/web-1/runs", op, `{"scenario": "use"}`)
	d := e.wantError("POST", "/v1/incarnations/web-1/runs", http.StatusBadRequest, "invalid", b, st)
	if !strings.Contains(d.Message, "scenario/use/main.yml:4") || !strings.Contains(d.Message, "service:pg") {
		t.Errorf("refusal %q does not name file:line and the scope", d.Message)
	}
	// Re-scoped to one incarnation: pg-1 still reads it; at run time the
	// check is made again.
	if _, err := admin.SetScopedSecret(ctx, "pg_pw", "Pg-Secret-7781", "incarnation:pg-2"); err != nil {
		t.Fatal(err)
	}
	st, b = e.do("POST", "/v1/incarnations/pg-1/runs", op, `{"scenario": "use"}`)
	e.wantError("POST", "/v1/incarnations/pg-1/runs", http.StatusBadRequest, "invalid", b, st)

	// A service-scoped admin: manages pg's secrets, not the keeper's.
	ctxAdmin := auth.Principal{ArchonID: e.archons[auth.RoleAdmin].ID}
	ar, err := e.auth.CreateArchon(ctx, "pgadmin", auth.RoleNone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.auth.Grant(ctx, ctxAdmin, store.SubjectArchon, ar.ID, "admin", auth.Scope{Kind: auth.ObjService, Name: "pg"}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.auth.IssueToken(ctx, ar, 3600e9, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetSecret(ctx, "global", "G-1"); err != nil {
		t.Fatal(err)
	}
	if st, b := e.do("PUT", "/v1/secrets/pg_other", tok.Token, `{"secret": "x1", "scope": "service:pg"}`); st != http.StatusOK {
		t.Errorf("pg admin sets a pg secret: %d %s", st, b)
	}
	st, b = e.do("PUT", "/v1/secrets/global", tok.Token, `{"secret": "x2"}`)
	e.wantError("PUT", "/v1/secrets/global", http.StatusForbidden, "forbidden", b, st)
	st, b = e.do("PUT", "/v1/secrets/pg_other", tok.Token, `{"secret": "x3", "scope": "keeper"}`)
	e.wantError("PUT", "/v1/secrets/pg_other", http.StatusForbidden, "forbidden", b, st)
	st, b = e.do("GET", "/v1/secrets", tok.Token, "")
	if st != http.StatusOK || !strings.Contains(string(b), `"pg_other"`) || strings.Contains(string(b), `"global"`) {
		t.Errorf("pg admin's secret list: %d %s", st, b)
	}
}
