package ui_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// sessionCookie returns the UI session cookie c holds for the server.
func (e *actEnv) sessionCookie(c *http.Client) *http.Cookie {
	e.t.Helper()
	u, _ := url.Parse(e.srv.URL + "/ui/")
	for _, k := range c.Jar.Cookies(u) {
		if k.Name == "soulstack_ui" {
			return k
		}
	}
	e.t.Fatal("no session cookie")
	return nil
}

// thief is a fresh client holding a copy of ck, as a stolen cookie would
// be replayed.
func (e *actEnv) thief(ck *http.Cookie) *http.Client {
	e.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	u, _ := url.Parse(e.srv.URL + "/ui/")
	jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/ui"}})
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// bearerStatus is the status of GET /v1/whoami with value as the bearer
// token and as a cookie of the same name as the UI's.
func (e *actEnv) bearerStatus(value string) int {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+value)
	req.AddCookie(&http.Cookie{Name: "soulstack_ui", Value: value})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Audit finding (issue 31): the UI cookie was the API token itself. Now it
// is the random id of a server-side session: not the token, not a token
// at all (the API refuses it as a bearer), and stored only hashed.
func TestSessionCookieIsNotTheToken(t *testing.T) {
	e := newActEnv(t)
	c := e.session(auth.RoleAdmin)
	ck := e.sessionCookie(c)
	if ck.Value == e.tokens[auth.RoleAdmin] || strings.Contains(ck.Value, e.tokens[auth.RoleAdmin]) || strings.Count(ck.Value, ".") == 2 {
		t.Fatalf("the session cookie carries the token (or a JWT): %q", ck.Value)
	}
	if got := e.bearerStatus(ck.Value); got != http.StatusUnauthorized {
		t.Fatalf("GET /v1/whoami with the session cookie as bearer: %d, want 401", got)
	}
	if got := e.bearerStatus(e.tokens[auth.RoleAdmin]); got != http.StatusOK {
		t.Fatalf("GET /v1/whoami with the token: %d, want 200", got)
	}
	// The store keeps no copy of the cookie's value that would sign in.
	if _, err := e.st.GetUISession(context.Background(), []byte(ck.Value)); err == nil {
		t.Fatal("the store holds the session id in clear")
	}
	if status, _ := e.get(c, "/ui/souls"); status != http.StatusOK {
		t.Fatalf("signed-in session: GET /ui/souls %d", status)
	}
}

// Audit finding (issue 31): logout did not revoke the session. Now logout
// ends it server-side: a copy of the cookie taken before logout (stolen)
// opens no page, performs no action and is no API token afterwards.
func TestLogoutRevokesSessionForStolenCookie(t *testing.T) {
	e := newActEnv(t)
	c := e.session(auth.RoleAdmin)
	stolen := e.sessionCookie(c)
	thief := e.thief(stolen)
	csrf := e.csrf(c, "/ui/souls/newcomer")

	// Before logout the copy works like the original, and an action done
	// through the session is audited as coming from the UI session.
	if status, _ := e.get(thief, "/ui/souls"); status != http.StatusOK {
		t.Fatalf("stolen cookie before logout: %d, want 200 (the test needs a working copy)", status)
	}
	if status, loc, body := e.post(c, "/ui/souls/newcomer/accept", url.Values{"csrf": {csrf}, "covens": {"web"}}, nil); status != http.StatusSeeOther {
		t.Fatalf("accept before logout: %d %s %.300s", status, loc, body)
	}
	entries, err := e.st.ListAudit(context.Background(), store.AuditFilter{Action: "POST /v1/souls/{sid}/accept"})
	if err != nil || len(entries) != 1 || entries[0].Summary["via"] != "ui session" {
		t.Fatalf("audit of the UI's accept: %+v %v, want one entry via the ui session", entries, err)
	}

	// A logout without the session's CSRF token (a forced logout) is
	// refused and ends nothing.
	if status, _, _ := e.post(c, "/ui/logout", url.Values{}, nil); status != http.StatusForbidden {
		t.Fatalf("logout without CSRF token: %d, want 403", status)
	}
	if status, _ := e.get(thief, "/ui/souls"); status != http.StatusOK {
		t.Fatalf("after a refused logout: %d, want the session alive", status)
	}

	status, loc, _ := e.post(c, "/ui/logout", url.Values{"csrf": {csrf}}, nil)
	if status != http.StatusSeeOther || loc != "/ui/login?out=1" {
		t.Fatalf("logout: %d to %q", status, loc)
	}

	for _, cl := range map[string]*http.Client{"browser": c, "stolen copy": thief} {
		res, err := cl.Get(e.srv.URL + "/ui/souls")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/ui/login") {
			t.Fatalf("page after logout: %d to %q, want 303 to the login page", res.StatusCode, res.Header.Get("Location"))
		}
	}
	thief = e.thief(stolen)
	status, loc, _ = e.post(thief, "/ui/souls/newcomer/reject", url.Values{"csrf": {csrf}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login") {
		t.Fatalf("action with the stolen cookie after logout: %d to %q, want 303 to the login page", status, loc)
	}
	soul, err := e.st.GetSoul(context.Background(), "newcomer")
	if err != nil {
		t.Fatal(err)
	}
	if soul.Status == store.SoulRejected || soul.Status == store.SoulPending {
		t.Fatalf("the stolen cookie's reject went through: soul is %s", soul.Status)
	}
	if got := e.bearerStatus(stolen.Value); got != http.StatusUnauthorized {
		t.Fatalf("the stolen cookie as bearer after logout: %d, want 401", got)
	}
	// The token the session was opened with is not revoked: soulctl may
	// use it still.
	if got := e.bearerStatus(e.tokens[auth.RoleAdmin]); got != http.StatusOK {
		t.Fatalf("the token after the UI logout: %d, want 200", got)
	}
	// Signing in again opens a new session with a new id.
	c2 := e.session(auth.RoleAdmin)
	if e.sessionCookie(c2).Value == stolen.Value {
		t.Fatal("a new sign-in reused the ended session's id")
	}
}
