package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
)

// The actions of issue 20's second part over HTTP, as each role: create
// an incarnation (members previewed), edit a soul's covens, execute a
// procedure with its public vars, add and delete a schedule. Forms are
// absent for roles that cannot use them, and their POSTs are refused.
func TestMoreActionsByRole(t *testing.T) {
	e := newActEnv(t)
	ctx := t.Context()
	sched, err := e.api.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "greet", Cron: "0 3 * * *",
		Vars: map[string]any{"who": "night"}})
	if err != nil {
		t.Fatal(err)
	}

	viewer := e.session(auth.RoleViewer)
	for page, forms := range map[string][]string{
		"/ui/incarnations": {`id="new-incarnation-link"`},
		"/ui/incarnations/new?name=x&service=web&covens=web": {`id="create-form"`},
		"/ui/procedures/greet":                               {`id="execute-form"`, `id="schedule-form"`, `id="delete-schedule-`},
		"/ui/schedules":                                      {`id="delete-schedule-`},
		"/ui/souls/a":                                        {`id="covens-form"`},
	} {
		_, body := e.get(viewer, page)
		lacks(t, "viewer "+page, body, forms...)
	}
	tok := e.csrf(viewer, "/ui/")
	for path, form := range map[string]url.Values{
		"/ui/incarnations":                      {"name": {"x"}, "service": {"web"}, "covens": {"web"}, "in.port": {"1"}},
		"/ui/procedures/greet/execute":          {"var.who": {"v"}},
		"/ui/schedules":                         {"procedure": {"greet"}, "cron": {"* * * * *"}},
		"/ui/schedules/" + sched.ID + "/delete": {},
		"/ui/souls/a/covens":                    {"covens": {"x"}},
	} {
		form.Set("csrf", tok)
		if status, _, _ := e.post(viewer, path, form, nil); status != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d, want 403", path, status)
		}
	}

	op := e.session(auth.RoleOperator)
	_, soul := e.get(op, "/ui/souls/a")
	lacks(t, "operator soul page", soul, `id="covens-form"`)
	tok = e.csrf(op, "/ui/")
	if status, _, _ := e.post(op, "/ui/souls/a/covens", url.Values{"csrf": {tok}, "covens": {"x"}}, nil); status != http.StatusForbidden {
		t.Errorf("operator POST covens: %d, want 403", status)
	}

	// Create: the preview lists the matching souls and the create input.
	_, prev := e.get(op, "/ui/incarnations/new?name=shop&service=web&covens=web")
	contains(t, "preview", prev, `<span class="muted" id="matching">2 souls</span>`, `<a href="/ui/souls/a">a</a>`,
		`<a href="/ui/souls/b">b</a>`, `id="create-form"`, `name="in.port"`, `type="password" id="in-token"`)
	_, prev = e.get(op, "/ui/incarnations/new?name=shop&service=web&covens=web,nothing")
	contains(t, "empty preview", prev, `id="matching">0 souls</span>`, "No accepted soul carries")
	status, loc, body := e.post(op, "/ui/incarnations", url.Values{"csrf": {tok}, "name": {"shop"}, "service": {"web"},
		"covens": {"web"}, "in.port": {"8081"}, "in.banner": {"shop banner"}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs/") {
		t.Fatalf("create: %d → %q\n%s", status, loc, body)
	}
	e.wait(strings.TrimPrefix(loc, "/ui/runs/"))
	inc, err := e.st.GetIncarnation(ctx, "shop")
	if err != nil || strings.Join(inc.Members, ",") != "a,b" || inc.State["banner"] != "shop banner" {
		t.Errorf("created incarnation: %+v, %v", inc, err)
	}
	status, _, body = e.post(op, "/ui/incarnations", url.Values{"csrf": {tok}, "name": {"shop2"}, "service": {"web"},
		"covens": {"web"}, "in.port": {"many"}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "input port: &#34;many&#34; is not a whole number") {
		t.Errorf("bad input: %d\n%s", status, tail(body, 800))
	}

	// Execute with a public var; a bad number is refused with its reason.
	status, loc, body = e.post(op, "/ui/procedures/greet/execute", url.Values{"csrf": {tok}, "var.who": {"world"}, "var.times": {"2"}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/tasks/") {
		t.Fatalf("execute: %d → %q\n%s", status, loc, tail(body, 800))
	}
	task, err := e.st.GetCheckerTask(ctx, strings.TrimPrefix(loc, "/ui/tasks/"))
	if err != nil || task.Vars["who"] != "world" || task.Vars["times"] != float64(2) {
		t.Errorf("executed task: %+v, %v", task.Vars, err)
	}
	status, _, body = e.post(op, "/ui/procedures/greet/execute", url.Values{"csrf": {tok}, "var.who": {"w"}, "var.times": {"twice"}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "var times: &#34;twice&#34; is not a number") {
		t.Errorf("bad var: %d\n%s", status, tail(body, 800))
	}

	// Schedules: add, then delete.
	status, loc, _ = e.post(op, "/ui/schedules", url.Values{"csrf": {tok}, "procedure": {"greet"}, "cron": {"*/5 * * * *"},
		"var.who": {"cron"}}, nil)
	if status != http.StatusSeeOther || loc != "/ui/schedules?done=scheduled" {
		t.Fatalf("add schedule: %d → %q", status, loc)
	}
	scheds, err := e.st.ListSchedules(ctx)
	if err != nil || len(scheds) != 2 {
		t.Fatalf("schedules: %d, %v", len(scheds), err)
	}
	var added string
	for _, s := range scheds {
		if s.Cron == "*/5 * * * *" && s.Vars["who"] == "cron" {
			added = s.ID
		}
	}
	if added == "" {
		t.Fatalf("the added schedule is not stored: %+v", scheds)
	}
	_, page := e.get(op, "/ui/schedules")
	contains(t, "schedules page", page, `id="delete-schedule-`+added+`"`)
	if status, loc, _ = e.post(op, "/ui/schedules/"+added+"/delete", url.Values{"csrf": {tok}}, nil); status != http.StatusSeeOther {
		t.Fatalf("delete schedule: %d → %q", status, loc)
	}
	if scheds, _ = e.st.ListSchedules(ctx); len(scheds) != 1 || scheds[0].ID != sched.ID {
		t.Errorf("after delete: %+v", scheds)
	}

	// Covens, as admin.
	admin := e.session(auth.RoleAdmin)
	_, soul = e.get(admin, "/ui/souls/a")
	contains(t, "admin soul page", soul, `id="covens-form"`, `name="covens" value="web"`)
	atok := e.csrf(admin, "/ui/")
	if status, loc, _ = e.post(admin, "/ui/souls/a/covens", url.Values{"csrf": {atok}, "covens": {"web, edge"}}, nil); status != http.StatusSeeOther || loc != "/ui/souls/a?done=covens" {
		t.Fatalf("set covens: %d → %q", status, loc)
	}
	if s, _ := e.st.GetSoul(ctx, "a"); strings.Join(s.Covens, ",") != "edge,web" {
		t.Errorf("covens of a: %v", s.Covens)
	}
}
