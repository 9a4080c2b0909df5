package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
)

// Audit finding (issue 31): the shell-injection warning of `scenario
// validate` was not shown when the Keeper registered the service. Register,
// update and get now carry it, with file:line:col.
func TestServiceWarningsAtRegistration(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin, viewer := e.client(auth.RoleAdmin), e.client(auth.RoleViewer)
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "v1")

	wantWarning := func(what string, ws []apitypes.Problem) {
		t.Helper()
		if len(ws) != 1 || ws[0].File != "scenario/greet/main.yml" || ws[0].Line != 6 || ws[0].Col != 38 ||
			!strings.Contains(ws[0].Message, catalogtest.ShellWarningText) || !strings.HasPrefix(ws[0].Text, "scenario/greet/main.yml:6:38: ") {
			t.Fatalf("%s: warnings %+v, want the shell-injection warning at scenario/greet/main.yml:6:38", what, ws)
		}
	}

	clean, err := admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "my-service", Git: repo.Dir, Ref: "master"})
	if err != nil {
		t.Fatal(err)
	}
	if len(clean.Warnings) != 0 {
		t.Fatalf("a clean service has warnings: %+v", clean.Warnings)
	}

	repo.Commit(map[string]string{"scenario/greet/main.yml": catalogtest.ShellWarningScenario}, "greet")
	up, err := admin.UpdateService(ctx, "my-service", apitypes.UpdateServiceRequest{Ref: "master"})
	if err != nil {
		t.Fatal(err)
	}
	wantWarning("update", up.Warnings)
	reg, err := admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "other", Git: repo.Dir, Ref: "master"})
	if err != nil {
		t.Fatal(err)
	}
	wantWarning("register", reg.Warnings)
	got, err := viewer.GetService(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	wantWarning("get", got.Warnings)
}
