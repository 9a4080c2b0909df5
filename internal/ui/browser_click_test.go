package ui_test

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// submitPage holds a form the UI rendered for the browser's own session
// and submits it from script after filling the given fields.
var submitPage = template.Must(template.New("s").Parse(`<!doctype html>
<html><body>{{.Form}}
<script>
const form = document.forms[0];
for (const [k, v] of new URLSearchParams({{.Fill}})) {
  const el = form.querySelector('[name="' + k + '"]');
  if (el.type === "checkbox") { el.checked = v === "1"; } else { el.value = v; }
}
form.requestSubmit();
</script></body></html>`))

// submit signs Chromium in as role (the real login form), then serves it,
// on the UI's origin, the action form with id form as the UI rendered page
// for that browser's session cookie (CSRF field included); the browser
// fills it and submits it — a real form POST with the browser's Origin,
// Sec-Fetch-Site and SameSite=Strict cookie — and the DOM it ends on after
// the UI's redirect is returned.
func submit(t *testing.T, e *actEnv, role auth.Role, page, form string, fill url.Values) string {
	t.Helper()
	formRE := regexp.MustCompile(`(?s)<form[^>]*id="` + regexp.QuoteMeta(form) + `".*?</form>`)
	mux := http.NewServeMux()
	mux.Handle("/", e.h)
	mux.HandleFunc("GET /test/signin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		bootstrap.Execute(w, map[string]string{"Token": e.tokens[role], "Next": "/ui/test-submit"})
	})
	mux.HandleFunc("GET /ui/test-submit", func(w http.ResponseWriter, r *http.Request) {
		req := httptest.NewRequest(http.MethodGet, page, nil)
		for _, c := range r.Cookies() {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		m := formRE.FindString(rec.Body.String())
		if m == "" {
			fmt.Fprintf(w, `<p id="no-form">no form (%d)</p>`, rec.Code)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		submitPage.Execute(w, map[string]any{"Form": template.HTML(m), "Fill": fill.Encode()})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	return chromiumDOM(t, srv.URL+"/test/signin")
}

func TestBrowserActionsOperator(t *testing.T) {
	e := newActEnv(t, failStub)
	dom := submit(t, e, auth.RoleOperator, "/ui/incarnations/site/start?scenario=create", "run-form",
		url.Values{"in.port": {"8080"}, "in.banner": {"from the browser"}})
	contains(t, "started run DOM", dom, "<h1>Run <code>", "from the browser")
	e.lock()
	dom = submit(t, e, auth.RoleOperator, "/ui/incarnations/site", "unlock-form", url.Values{"reason": {"checked by hand"}})
	contains(t, "unlocked DOM", dom, `id="flash">Unlocked.`)
	if inc := e.inc(); inc.Status == store.IncarnationErrorLocked {
		t.Error("the browser's unlock did not unlock")
	}
	dom = submit(t, e, auth.RoleOperator, "/ui/souls/newcomer", "accept-form", nil)
	contains(t, "operator soul DOM", dom, `id="no-form"`)
}

func TestBrowserActionsAdmin(t *testing.T) {
	e := newActEnv(t)
	dom := submit(t, e, auth.RoleAdmin, "/ui/souls/newcomer", "accept-form", url.Values{"covens": {"web"}})
	contains(t, "accepted DOM", dom, `id="flash">Soul accepted.`, "<h1>newcomer")
	if s, _ := e.st.GetSoul(context.Background(), "newcomer"); s.Status == store.SoulPending {
		t.Error("the browser's accept did not accept")
	}
	dom = submit(t, e, auth.RoleAdmin, "/ui/join-tokens", "join-token-form", url.Values{"covens": {"web"}, "ttl": {"1h"}})
	contains(t, "join token DOM", dom, `id="join-token-value"`, "Shown this once", "SOUL_JOIN_TOKEN=")
	// The install line keeps the token out of every process's argv (N2).
	if strings.Contains(dom, "--join-token ") {
		t.Errorf("the install line passes the token as an argument:\n%s", dom)
	}
}
