package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
)

// TestM3TrustDecisionsAreAdminOnly: audit M3 — which code the fleet runs
// is an admin's decision (SPEC §10.2): registering a service, moving its
// ref, deleting it and upgrading an incarnation need the admin role. An
// operator's attempt (the audit's `incarnation upgrade --ref unreviewed`)
// is a 403 and moves nothing; the admin's works.
func TestM3TrustDecisionsAreAdminOnly(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	trust := map[string]bool{
		"POST /v1/services":                    true,
		"PATCH /v1/services/{name}":            true,
		"DELETE /v1/services/{name}":           true,
		"POST /v1/incarnations/{name}/upgrade": true,
	}
	seen := 0
	for _, rt := range e.api.Routes() {
		if !trust[rt.Pattern] {
			continue
		}
		seen++
		if builtinAllows(auth.RoleOperator, rt) || !builtinAllows(auth.RoleAdmin, rt) {
			t.Errorf("%s needs permission %q, which operators hold or admins do not", rt.Pattern, rt.Permission)
		}
	}
	if seen != 4 {
		t.Fatalf("found %d of the 4 trust routes", seen)
	}

	repo := catalogtest.NewRepo(t)
	c1 := repo.Commit(catalogtest.MyService, "v1")
	repo.Tag("v1")
	c2 := repo.Commit(map[string]string{"scenario/create/main.yml": catalogtest.MyService["scenario/create/main.yml"] + "\n# unreviewed\n"}, "unreviewed")
	admin := e.client(auth.RoleAdmin)
	if _, err := admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "evil", Git: repo.Dir, Ref: "v1"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []auth.Role{auth.RoleOperator, auth.RoleViewer} {
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/v1/services", `{"name": "evil2", "git": "` + repo.Dir + `", "ref": "master"}`},
			{"PATCH", "/v1/services/evil", `{"ref": "master"}`},
			{"DELETE", "/v1/services/evil", ""},
			{"POST", "/v1/incarnations/evil-dev/upgrade", `{"ref": "master"}`},
		} {
			st, b := e.do(c.method, c.path, e.tokens[r], c.body)
			e.wantError(c.method, c.path, http.StatusForbidden, "forbidden", b, st)
		}
	}
	svc, err := admin.GetService(ctx, "evil")
	if err != nil || svc.Commit != c1 {
		t.Fatalf("after the refused calls the service is %+v, %v; want still at %s", svc, err, c1)
	}
	if svc, err := admin.UpdateService(ctx, "evil", apitypes.UpdateServiceRequest{Ref: "master"}); err != nil || svc.Commit != c2 {
		t.Fatalf("the admin's update: %+v, %v", svc, err)
	}
}
