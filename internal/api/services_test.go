package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
)

func TestServices(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin, viewer := e.client(auth.RoleAdmin), e.client(auth.RoleViewer)
	repo := catalogtest.NewRepo(t)
	c1 := repo.Commit(catalogtest.MyService, "v1")
	repo.Tag("v1.0.0")

	// The seed's request, as curl sends it.
	st, b := e.do("POST", "/v1/services", e.tokens[auth.RoleAdmin],
		`{"name": "my-service", "git": "`+repo.Dir+`", "ref": "v1.0.0"}`)
	if st != http.StatusCreated || !strings.Contains(string(b), c1) {
		t.Fatalf("register: %d %s", st, b)
	}
	svc, err := viewer.GetService(ctx, "my-service")
	if err != nil || svc.Commit != c1 || svc.Ref != "v1.0.0" {
		t.Fatalf("service %+v, %v", svc, err)
	}
	_, err = admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "my-service", Git: repo.Dir, Ref: "v1.0.0"})
	wantAPI(t, err, http.StatusConflict, domain.CodeConflict)

	// A ref that does not exist: 422 naming it.
	_, err = admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "other", Git: repo.Dir, Ref: "v2.0.0"})
	wantAPI(t, err, http.StatusUnprocessableEntity, domain.CodeUnprocessable)
	if !strings.Contains(err.Error(), `"v2.0.0"`) {
		t.Fatalf("422 message %q does not name the ref", err)
	}

	// An invalid repository: 400 with file:line problems.
	c2 := repo.Commit(map[string]string{"scenario/create/main.yml": catalogtest.BrokenScenario}, "broken")
	_, err = admin.UpdateService(ctx, "my-service", apitypes.UpdateServiceRequest{Ref: "master"})
	wantAPI(t, err, http.StatusBadRequest, domain.CodeInvalid)
	ps := err.(*apiclient.APIError).Problems()
	if len(ps) < 2 || ps[0].File != "scenario/create/main.yml" || ps[0].Line != 3 || !strings.HasPrefix(ps[0].Text, "scenario/create/main.yml:3:") {
		t.Fatalf("problems %+v", ps)
	}
	if svc, _ := viewer.GetService(ctx, "my-service"); svc.Commit != c1 {
		t.Fatalf("a refused update moved the service to %s", svc.Commit)
	}

	// Fix it and move the service.
	c3 := repo.Commit(map[string]string{"scenario/create/main.yml": catalogtest.MyService["scenario/create/main.yml"]}, "fixed")
	svc, err = admin.UpdateService(ctx, "my-service", apitypes.UpdateServiceRequest{Ref: "master"})
	if err != nil || svc.Commit != c3 || svc.Commit == c2 {
		t.Fatalf("update %+v, %v", svc, err)
	}
	list, err := viewer.ListServices(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
	if err := admin.DeleteService(ctx, "my-service"); err != nil {
		t.Fatal(err)
	}
	_, err = viewer.GetService(ctx, "my-service")
	wantAPI(t, err, http.StatusNotFound, domain.CodeNotFound)
	wantAPI(t, admin.DeleteService(ctx, "my-service"), http.StatusNotFound, domain.CodeNotFound)
}

func TestServiceURLPasswordHidden(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.client(auth.RoleAdmin)
	_, err := admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "remote", Git: "https://bob:hunter2@127.0.0.1:1/x.git", Ref: "main"})
	wantAPI(t, err, http.StatusUnprocessableEntity, domain.CodeUnprocessable)
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password: %v", err)
	}
	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{Action: "POST /v1/services"})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit %+v, %v", entries, err)
	}
	if g := entries[0].Summary["git"]; g != "https://bob:****@127.0.0.1:1/x.git" || entries[0].Target != "remote" {
		t.Fatalf("audited git %v, target %q", g, entries[0].Target)
	}
}
