package ui_test

import (
	"encoding/json"
	"html"
	"html/template"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
)

// formsPage signs Chromium in as a role, loads each page and writes into
// the DOM, as JSON, which of the wanted form ids each page has.
var formsPage = template.Must(template.New("f").Parse(`<!doctype html>
<html><body><pre id="result">…</pre>
<script>
(async () => {
  const out = {};
  try {
    await fetch("/ui/login", {method: "POST", redirect: "manual", body: new URLSearchParams({token: {{.Token}}})});
    for (const [page, ids] of Object.entries({{.Checks}})) {
      const res = await fetch(page);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      out[page] = {status: res.status, present: ids.filter(id => doc.getElementById(id) !== null)};
    }
  } catch (e) { out.error = String(e); }
  document.getElementById("result").textContent = JSON.stringify(out);
})();
</script></body></html>`))

// formsIn reports, from Chromium signed in as role, which of the form ids
// each page shows.
func formsIn(t *testing.T, e *actEnv, role auth.Role, checks map[string][]string) map[string][]string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", e.h)
	mux.HandleFunc("GET /test/forms", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		formsPage.Execute(w, map[string]any{"Token": e.tokens[role], "Checks": checks})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := chromiumDOM(t, srv.URL+"/test/forms")
	m := resultRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no result in the DOM:\n%s", tail(dom, 2000))
	}
	var res map[string]struct {
		Status  int
		Present []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &res); err != nil {
		t.Fatalf("result %q: %v", m[1], err)
	}
	out := map[string][]string{}
	for page := range checks {
		r, ok := res[page]
		if !ok || r.Status != http.StatusOK {
			t.Fatalf("%s as %s: %+v (%s)", page, role, r, m[1])
		}
		out[page] = r.Present
	}
	return out
}

// Chromium clicks through the actions of issue 20's second part: as
// operator it creates an incarnation from the previewed form, executes a
// procedure with a public var, adds a schedule and deletes one; as admin
// it edits a soul's covens. The viewer sees none of these forms, the
// operator not the covens form.
func TestBrowserMoreActions(t *testing.T) {
	e := newActEnv(t)
	ctx := t.Context()
	sched, err := e.api.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "greet", Cron: "0 3 * * *",
		Vars: map[string]any{"who": "night"}})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string][]string{
		"/ui/incarnations": {"new-incarnation-link"},
		"/ui/incarnations/new?name=shop&service=web&covens=web": {"create-form", "members-preview"},
		"/ui/procedures/greet": {"execute-form", "schedule-form", "delete-schedule-" + sched.ID},
		"/ui/souls/a":          {"covens-form"},
	}
	for role, want := range map[auth.Role]string{
		auth.RoleViewer:   "map[/ui/incarnations:[] /ui/incarnations/new?name=shop&service=web&covens=web:[] /ui/procedures/greet:[] /ui/souls/a:[]]",
		auth.RoleOperator: "map[/ui/incarnations:[new-incarnation-link] /ui/incarnations/new?name=shop&service=web&covens=web:[create-form members-preview] /ui/procedures/greet:[execute-form schedule-form delete-schedule-" + sched.ID + "] /ui/souls/a:[]]",
	} {
		if got := formsIn(t, e, role, all); fmtMap(got) != want {
			t.Errorf("forms as %s:\n got %s\nwant %s", role, fmtMap(got), want)
		}
	}

	dom := submit(t, e, auth.RoleOperator, "/ui/incarnations/new?name=shop&service=web&covens=web", "create-form",
		url.Values{"in.port": {"8081"}, "in.banner": {"made in Chromium"}})
	contains(t, "created DOM", dom, "<h1>Run <code>", "made in Chromium")
	if inc, err := e.st.GetIncarnation(ctx, "shop"); err != nil || strings.Join(inc.Members, ",") != "a,b" {
		t.Errorf("incarnation shop: %+v, %v", inc, err)
	}

	dom = submit(t, e, auth.RoleOperator, "/ui/procedures/greet", "execute-form", url.Values{"var.who": {"chromium"}})
	contains(t, "executed DOM", dom, "<h1>Task <code>", "chromium")

	dom = submit(t, e, auth.RoleOperator, "/ui/procedures/greet", "schedule-form", url.Values{"cron": {"*/10 * * * *"}, "var.who": {"every ten"}})
	contains(t, "scheduled DOM", dom, `id="flash">Schedule added.`, "*/10 * * * *")

	dom = submit(t, e, auth.RoleOperator, "/ui/schedules", "delete-schedule-"+sched.ID, nil)
	contains(t, "unscheduled DOM", dom, `id="flash">Schedule deleted.`)
	lacks(t, "unscheduled DOM", dom, "0 3 * * *")

	dom = submit(t, e, auth.RoleAdmin, "/ui/souls/a", "covens-form", url.Values{"covens": {"web, canary"}})
	contains(t, "covens DOM", dom, `id="flash">Covens saved.`)
	if s, _ := e.st.GetSoul(ctx, "a"); strings.Join(s.Covens, ",") != "canary,web" {
		t.Errorf("covens of a after the browser's edit: %v", s.Covens)
	}
}

// fmtMap prints a map of lists with sorted keys (fmt sorts map keys).
func fmtMap(m map[string][]string) string {
	var b strings.Builder
	b.WriteString("map[")
	first := true
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !first {
			b.WriteString(" ")
		}
		first = false
		b.WriteString(k + ":[" + strings.Join(m[k], " ") + "]")
	}
	b.WriteString("]")
	return b.String()
}
