package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// A state-changing POST that does not come from a page of the UI's own
// origin with the session's CSRF token is refused and changes nothing.
func TestActionForgedPostsRefused(t *testing.T) {
	e := newActEnv(t, failStub)
	e.lock()
	op := e.session(auth.RoleOperator)
	tok := e.csrf(op, "/ui/incarnations/site")
	admTok := e.csrf(e.session(auth.RoleAdmin), "/ui/incarnations/site")
	if tok == admTok {
		t.Fatal("two sessions share a CSRF token")
	}
	form := func(csrf string) url.Values { return url.Values{"reason": {"fixed by hand"}, "csrf": {csrf}} }
	for _, c := range []struct {
		name    string
		form    url.Values
		headers map[string]string
	}{
		{"no origin nor referer", form(tok), map[string]string{"Origin": ""}},
		{"another origin", form(tok), map[string]string{"Origin": "http://evil.example"}},
		{"another site's referer", form(tok), map[string]string{"Origin": "", "Referer": "http://evil.example/page"}},
		{"cross-site fetch", form(tok), map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"no token", form(""), nil},
		{"wrong token", form("AAAA" + tok[4:]), nil},
		{"another session's token", form(admTok), nil},
	} {
		status, _, body := e.post(op, "/ui/incarnations/site/unlock", c.form, c.headers)
		if status != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403\n%s", c.name, status, body)
		}
		if inc := e.inc(); inc.Status != store.IncarnationErrorLocked {
			t.Fatalf("%s: the forged POST unlocked the incarnation", c.name)
		}
	}
	// Without a session the action goes to the login page.
	anon := (&env{t: t}).client()
	if status, loc, _ := e.post(anon, "/ui/incarnations/site/unlock", form(tok), nil); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login") {
		t.Errorf("anonymous: status %d to %q, want 303 to the login page", status, loc)
	}
	// The genuine form, with a same-origin Referer instead of Origin, works.
	status, loc, body := e.post(op, "/ui/incarnations/site/unlock", form(tok), map[string]string{"Origin": "", "Referer": e.srv.URL + "/ui/incarnations/site"})
	if status != http.StatusSeeOther || loc != "/ui/incarnations/site?done=unlocked" {
		t.Fatalf("unlock: status %d to %q\n%s", status, loc, body)
	}
	if inc := e.inc(); inc.Status == store.IncarnationErrorLocked || inc.LockReason != "" {
		t.Errorf("after unlock: status %s, reason %q", inc.Status, inc.LockReason)
	}
	_, page := e.get(op, loc)
	contains(t, "after unlock", page, `id="flash">Unlocked.`)
	lacks(t, "after unlock", page, `id="unlock-form"`)
}

// Each role sees only the actions it may use, and the server refuses the
// others even with a valid CSRF token.
func TestActionRoles(t *testing.T) {
	e := newActEnv(t, failStub)
	failed := e.lock()
	viewer, op, adm := e.session(auth.RoleViewer), e.session(auth.RoleOperator), e.session(auth.RoleAdmin)

	_, vpage := e.get(viewer, "/ui/incarnations/site")
	lacks(t, "viewer incarnation page", vpage, `id="inc-actions"`, `id="unlock-form"`, `id="start-run"`, `id="drift-form"`, `id="resume-form"`)
	_, vrun := e.get(viewer, "/ui/runs/"+failed)
	lacks(t, "viewer run page", vrun, `id="resume-form"`, `id="cancel-form"`)
	_, opage := e.get(op, "/ui/incarnations/site")
	contains(t, "operator incarnation page", opage, `id="unlock-form"`, `id="start-run"`, `id="resume-form"`, `action="/ui/runs/`+failed+`/resume"`)
	_, orun := e.get(op, "/ui/runs/"+failed)
	contains(t, "operator run page", orun, `id="resume-form"`)
	_, vstart := e.get(viewer, "/ui/incarnations/site/start?scenario=create")
	lacks(t, "viewer start page", vstart, `id="run-form"`)

	vt := e.csrf(viewer, "/ui/souls")
	for _, path := range []string{"/ui/incarnations/site/unlock", "/ui/incarnations/site/drift", "/ui/runs/" + failed + "/resume", "/ui/runs/" + failed + "/cancel"} {
		status, _, body := e.post(viewer, path, url.Values{"csrf": {vt}, "reason": {"r"}, "scenario": {"create"}}, nil)
		if status != http.StatusForbidden || !strings.Contains(body, "permission &#34;") {
			t.Errorf("viewer POST %s: status %d, want 403 naming the permission\n%s", path, status, body)
		}
	}
	status, _, _ := e.post(viewer, "/ui/incarnations/site/runs", url.Values{"csrf": {vt}, "scenario": {"create"}, "in.port": {"1"}}, nil)
	if status != http.StatusForbidden {
		t.Errorf("viewer start run: status %d, want 403", status)
	}
	if inc := e.inc(); inc.Status != store.IncarnationErrorLocked {
		t.Fatal("a viewer's POST changed the incarnation")
	}

	// Souls and join tokens are the admin's.
	_, osouls := e.get(op, "/ui/souls")
	lacks(t, "operator souls page", osouls, `id="join-token-link"`)
	_, osoul := e.get(op, "/ui/souls/newcomer")
	lacks(t, "operator soul page", osoul, `id="soul-actions"`, `id="accept-form"`)
	_, ojt := e.get(op, "/ui/join-tokens")
	lacks(t, "operator join token page", ojt, `id="join-token-form"`)
	ot := e.csrf(op, "/ui/souls")
	for _, path := range []string{"/ui/souls/newcomer/accept", "/ui/souls/newcomer/reject", "/ui/souls/newcomer/delete", "/ui/join-tokens"} {
		status, _, body := e.post(op, path, url.Values{"csrf": {ot}, "confirm": {"newcomer"}, "covens": {"web"}}, nil)
		if status != http.StatusForbidden || !strings.Contains(body, "permission &#34;manage_souls&#34;") {
			t.Errorf("operator POST %s: status %d, want 403\n%s", path, status, body)
		}
	}
	if s, err := e.st.GetSoul(context.Background(), "newcomer"); err != nil || s.Status != store.SoulPending {
		t.Fatalf("operator's POSTs changed the soul: %+v %v", s, err)
	}
	_, asouls := e.get(adm, "/ui/souls")
	contains(t, "admin souls page", asouls, `id="join-token-link"`)
	_, asoul := e.get(adm, "/ui/souls/newcomer")
	contains(t, "admin soul page", asoul, `id="accept-form"`, `id="reject-form"`, `id="delete-form"`)
}

// An operator starts a run from the form generated from the scenario's
// typed input and lands on the run's page.
func TestActionStartRunForm(t *testing.T) {
	e := newActEnv(t)
	op := e.session(auth.RoleOperator)
	_, list := e.get(op, "/ui/incarnations/site/start")
	contains(t, "scenario list", list, `href="/ui/incarnations/site/start?scenario=create"`, `?scenario=break"`)
	_, form := e.get(op, "/ui/incarnations/site/start?scenario=create")
	contains(t, "run form", form,
		`id="run-form"`,
		`<input type="text" id="in-banner" name="in.banner" value="hello">`,
		`The motd banner`,
		`<input type="number" id="in-port" name="in.port" value="" required>`,
		`<input type="number" step="any" id="in-ratio" name="in.ratio" value="0.5">`,
		`<input type="checkbox" name="in.debug" value="true" checked>`,
		`<textarea id="in-peers" name="in.peers" rows="3"`,
		`>[]</textarea>`,
		`<input type="password" id="in-token" name="in.token" autocomplete="off">`,
		`id="check-mode"`,
	)
	tok := e.csrf(op, "/ui/incarnations/site/start?scenario=create")
	base := func() url.Values {
		return url.Values{"csrf": {tok}, "scenario": {"create"}, "in.banner": {"hi there"}, "in.port": {"8080"},
			"seen.debug": {"1"}, "in.labels": {`{"tier": "front"}`}, "in.peers": {`["a", "b"]`}, "in.token": {"sekret-value"}}
	}
	for _, bad := range []struct{ field, value, want string }{
		{"in.port", "eighty", "input port: &#34;eighty&#34; is not a whole number"},
		{"in.labels", `["x"]`, "input labels: must be a JSON object"},
		{"in.peers", `[1,`, "input peers: not valid JSON"},
		{"in.token", "", ""}, // leaving a secret empty is fine: not sent
	} {
		f := base()
		f.Set(bad.field, bad.value)
		if bad.want == "" {
			continue
		}
		status, _, body := e.post(op, "/ui/incarnations/site/runs", f, nil)
		if status != http.StatusBadRequest || !strings.Contains(body, bad.want) {
			t.Errorf("%s=%q: status %d, want 400 with %q\n%s", bad.field, bad.value, status, bad.want, body)
		}
	}
	status, loc, body := e.post(op, "/ui/incarnations/site/runs", base(), nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs/") {
		t.Fatalf("start: status %d to %q\n%s", status, loc, body)
	}
	id := strings.TrimPrefix(loc, "/ui/runs/")
	run := e.wait(id)
	if run.Status != store.RunSucceeded || run.Scenario != "create" || run.Check {
		t.Errorf("run: %s %s check=%v", run.Status, run.Scenario, run.Check)
	}
	if run.Input["banner"] != "hi there" || run.Input["port"] != float64(8080) || run.Input["debug"] != false {
		t.Errorf("run input = %v", run.Input)
	}
	if run.Input["token"] == "sekret-value" {
		t.Error("the secret input is stored in clear")
	}
	_, page := e.get(op, loc)
	contains(t, "run page", page, "<code>"+id+"</code>", "hi there")
	lacks(t, "run page", page, "sekret-value")
	if inc := e.inc(); inc.State["banner"] != "hi there" {
		t.Errorf("state after the run = %v", inc.State)
	}

	// Check mode.
	f := base()
	f.Set("check", "1")
	if _, loc, _ = e.post(op, "/ui/incarnations/site/runs", f, nil); !strings.HasPrefix(loc, "/ui/runs/") {
		t.Fatalf("check-mode start went to %q", loc)
	}
	if run := e.wait(strings.TrimPrefix(loc, "/ui/runs/")); !run.Check {
		t.Error("check-mode toggle ignored")
	}
}

// Cancel, resume, unlock and drift from the run and incarnation pages.
func TestActionCancelResumeDrift(t *testing.T) {
	e := newActEnv(t, failStub, dispatch.Stub{Task: "drain", Hang: true})
	op := e.session(auth.RoleOperator)
	failed := e.lock()

	tok := e.csrf(op, "/ui/runs/"+failed)
	status, loc, body := e.post(op, "/ui/runs/"+failed+"/resume", url.Values{"csrf": {tok}, "reason": {""}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "reason") {
		t.Errorf("resume without a reason: status %d\n%s", status, body)
	}
	status, loc, body = e.post(op, "/ui/runs/"+failed+"/resume", url.Values{"csrf": {tok}, "reason": {"disk replaced"}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs/") || strings.HasSuffix(loc, failed) {
		t.Fatalf("resume: status %d to %q\n%s", status, loc, body)
	}
	resumed := e.wait(strings.TrimPrefix(loc, "/ui/runs/"))
	if resumed.ResumedFrom != failed {
		t.Errorf("resumed run resumes %q, want %q", resumed.ResumedFrom, failed)
	}

	// Unlock (the resumed run failed again), then check drift.
	status, _, body = e.post(op, "/ui/incarnations/site/unlock", url.Values{"csrf": {tok}, "reason": {" "}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "reason is required") {
		t.Errorf("unlock without a reason: status %d\n%s", status, body)
	}
	if status, _, body = e.post(op, "/ui/incarnations/site/unlock", url.Values{"csrf": {tok}, "reason": {"checked by hand"}}, nil); status != http.StatusSeeOther {
		t.Fatalf("unlock: status %d\n%s", status, body)
	}
	status, loc, body = e.post(op, "/ui/incarnations/site/drift", url.Values{"csrf": {tok}, "scenario": {"create"}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs/") {
		t.Fatalf("drift: status %d to %q\n%s", status, loc, body)
	}
	if run := e.wait(strings.TrimPrefix(loc, "/ui/runs/")); !run.Drift {
		t.Errorf("drift run: %+v", run)
	}

	// Cancel a hanging run from its page.
	status, loc, body = e.post(op, "/ui/incarnations/site/runs", url.Values{"csrf": {tok}, "scenario": {"slow"}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("start slow: status %d\n%s", status, body)
	}
	id := strings.TrimPrefix(loc, "/ui/runs/")
	_, page := e.get(op, loc)
	contains(t, "running run page", page, `id="cancel-form"`)
	if status, loc, body = e.post(op, "/ui/runs/"+id+"/cancel", url.Values{"csrf": {tok}}, nil); status != http.StatusSeeOther || loc != "/ui/runs/"+id+"?done=cancelled" {
		t.Fatalf("cancel: status %d to %q\n%s", status, loc, body)
	}
	if run := e.wait(id); run.Status != store.RunCancelled {
		t.Errorf("cancelled run: status %s, want cancelled: %+v", run.Status, run)
	}
}

// An admin accepts, rejects and deletes souls and creates a join token,
// which is shown once with the install.sh line.
func TestActionSoulsAndJoinToken(t *testing.T) {
	e := newActEnv(t)
	adm := e.session(auth.RoleAdmin)
	ctx := context.Background()
	tok := e.csrf(adm, "/ui/souls/newcomer")
	if status, loc, body := e.post(adm, "/ui/souls/newcomer/accept", url.Values{"csrf": {tok}, "covens": {"web, db"}}, nil); status != http.StatusSeeOther || loc != "/ui/souls/newcomer?done=accepted" {
		t.Fatalf("accept: status %d to %q\n%s", status, loc, body)
	}
	s, err := e.st.GetSoul(ctx, "newcomer")
	if err != nil || s.Status == store.SoulPending || !slices.Equal(s.Covens, []string{"db", "web"}) {
		t.Errorf("accepted soul: %+v %v", s, err)
	}
	if status, _, body := e.post(adm, "/ui/souls/a/reject", url.Values{"csrf": {tok}}, nil); status != http.StatusSeeOther {
		t.Fatalf("reject: status %d\n%s", status, body)
	}
	if s, _ := e.st.GetSoul(ctx, "a"); s.Status != store.SoulRejected {
		t.Errorf("rejected soul: status %s", s.Status)
	}
	if status, _, _ := e.post(adm, "/ui/souls/b/delete", url.Values{"csrf": {tok}, "confirm": {"a"}}, nil); status != http.StatusBadRequest {
		t.Errorf("delete with the wrong confirmation: status %d, want 400", status)
	}
	if status, loc, body := e.post(adm, "/ui/souls/b/delete", url.Values{"csrf": {tok}, "confirm": {"b"}}, nil); status != http.StatusSeeOther || loc != "/ui/souls?done=deleted" {
		t.Fatalf("delete: status %d to %q\n%s", status, loc, body)
	}
	if _, err := e.st.GetSoul(ctx, "b"); domain.ErrorCode(err) != domain.CodeNotFound && err == nil {
		t.Error("deleted soul is still there")
	}

	_, form := e.get(adm, "/ui/join-tokens")
	contains(t, "join token form", form, `id="join-token-form"`)
	status, _, body := e.post(adm, "/ui/join-tokens", url.Values{"csrf": {tok}, "covens": {"web"}, "ttl": {"2h"}, "max_uses": {"3"}}, nil)
	if status != http.StatusCreated {
		t.Fatalf("join token: status %d\n%s", status, body)
	}
	contains(t, "created join token", body, `id="join-token-value"`, "Shown this once", `--pinnedpubkey &#39;sha256//pin=&#39;`, "/install.sh || echo exit 1; } | SOUL_JOIN_TOKEN=&#39;SSJ1.")
	if strings.Contains(body, "--join-token") {
		t.Errorf("the created join token page puts the token on a command line:\n%s", body)
	}
	jts, err := e.st.ListJoinTokens(ctx)
	if err != nil || len(jts) != 1 || jts[0].MaxUses != 3 || !slices.Equal(jts[0].Covens, []string{"web"}) {
		t.Fatalf("join tokens in the store: %+v %v", jts, err)
	}
	if status, _, body := e.post(adm, "/ui/join-tokens", url.Values{"csrf": {tok}, "ttl": {"soon"}}, nil); status != http.StatusBadRequest || !strings.Contains(body, "not a duration") {
		t.Errorf("bad ttl: status %d\n%s", status, body)
	}
}
