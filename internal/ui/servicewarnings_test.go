package ui_test

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
)

// Audit finding (issue 31): the shell-injection warning of `scenario
// validate` is shown on the service's page, with file:line:col; a service
// without warnings shows none.
func TestServicePageShowsWarnings(t *testing.T) {
	e := newActEnv(t)
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "v1")
	repo.Commit(map[string]string{"scenario/greet/main.yml": catalogtest.ShellWarningScenario}, "greet")
	if _, err := e.api.RegisterService(context.Background(), apitypes.RegisterServiceRequest{Name: "greeter", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	c := e.session(auth.RoleViewer)
	status, body := e.get(c, "/ui/services/greeter")
	if status != http.StatusOK {
		t.Fatalf("service page: %d", status)
	}
	text := html.UnescapeString(body)
	for _, want := range []string{`id="service-warnings"`, "scenario/greet/main.yml:6:38", catalogtest.ShellWarningText} {
		if !strings.Contains(text, want) {
			t.Errorf("service page lacks %q", want)
		}
	}
	if _, body := e.get(c, "/ui/services/web"); strings.Contains(body, `id="service-warnings"`) {
		t.Error("a service without warnings shows a warnings list")
	}
}
