package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/ui"
)

// Every page needs a session; without one the browser lands on the login
// page, which remembers where it was going.
func TestPagesRequireLogin(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	for _, path := range []string{"/ui/", "/ui/souls", "/ui/souls/web-1.example", "/ui/services/redis",
		"/ui/incarnations/cache", "/ui/runs/" + runRestart, "/ui/procedures/fence_node", "/ui/tasks/" + taskID,
		"/ui/schedules", "/ui/no/such/page"} {
		res, err := c.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			t.Errorf("GET %s without session: status %d, want 303", path, res.StatusCode)
			continue
		}
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil || loc.Path != "/ui/login" {
			t.Errorf("GET %s without session: redirect to %q, want /ui/login", path, res.Header.Get("Location"))
		}
		if path != "/ui/" && loc.Query().Get("next") != path {
			t.Errorf("GET %s: next = %q", path, loc.Query().Get("next"))
		}
	}
	// Script endpoints answer 401 instead of redirecting.
	for _, path := range []string{"/ui/runs/" + runQueue + "/live", "/ui/runs/" + runQueue + "/events", "/ui/tasks/" + taskID + "/live"} {
		if status, _ := e.get(c, path); status != http.StatusUnauthorized {
			t.Errorf("GET %s without session: status %d, want 401", path, status)
		}
	}
}

func TestLoginSetsHardenedCookieAndRedirects(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	res := e.login(c, "  Bearer "+e.token+"\n", "/ui/runs/"+runRestart)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/runs/"+runRestart {
		t.Fatalf("login: %d to %q, want 303 to the run", res.StatusCode, res.Header.Get("Location"))
	}
	var ck *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == "soulstack_ui" {
			ck = k
		}
	}
	if ck == nil {
		t.Fatal("login set no session cookie")
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" {
		t.Errorf("cookie HttpOnly=%v SameSite=%v Path=%q; want HttpOnly, Strict, /ui", ck.HttpOnly, ck.SameSite, ck.Path)
	}
	if ck.Secure {
		t.Error("cookie is Secure on plain HTTP: the browser would never send it back")
	}
	if ck.Expires.IsZero() {
		t.Error("cookie has no expiry; want the token's")
	}
	body := e.page(c, "/ui/")
	contains(t, "dashboard", body, "vera-viewer", "viewer", "Sign out")
}

func TestLoginCookieSecureOverTLSOrWhenForced(t *testing.T) {
	e := newEnv(t)
	req := httptest.NewRequest(http.MethodPost, "https://keeper.example/ui/login", strings.NewReader("token="+url.QueryEscape(e.token)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.ui.Handler().ServeHTTP(rec, req)
	if !secureCookie(rec.Result().Cookies()) {
		t.Error("login over TLS: session cookie is not Secure")
	}

	forced := newEnv(t, func(c *ui.Config) { c.SecureCookie = true })
	if !secureCookie(forced.login(forced.client(), forced.token, "").Cookies()) {
		t.Error("SecureCookie: session cookie is not Secure")
	}
}

func secureCookie(cs []*http.Cookie) bool {
	for _, k := range cs {
		if k.Name == "soulstack_ui" {
			return k.Secure
		}
	}
	return false
}

func TestLoginRefusesBadTokens(t *testing.T) {
	e := newEnv(t)
	for name, tc := range map[string]struct{ token, msg string }{
		"empty":   {"", "missing bearer token"},
		"garbage": {"not-a-jwt", "invalid token"},
		"forged":  {e.forged, "invalid token"},
		"revoked": {e.revoked, "token revoked"},
		"expired": {e.expired, "token expired"},
	} {
		t.Run(name, func(t *testing.T) {
			c := e.client()
			form := url.Values{"token": {tc.token}}
			res, err := c.PostForm(e.srv.URL+"/ui/login", form)
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(t, res)
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", res.StatusCode)
			}
			if len(res.Cookies()) != 0 {
				t.Errorf("a refused login set a cookie: %v", res.Cookies())
			}
			contains(t, "login page", b, "That token was refused", tc.msg, `id="login-form"`)
			if tc.token != "" {
				lacks(t, "login page", b, tc.token) // never echo the token back
			}
		})
	}
}

// A cookie is checked on every request: revoking the token ends the
// session at once, and the browser is told why.
func TestRevokedTokenEndsSession(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	e.page(c, "/ui/souls")
	p, err := e.auth.Authenticate(t.Context(), e.token)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.RevokeToken(t.Context(), p.TokenID, e.now); err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(e.srv.URL + "/ui/souls")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?") || !strings.Contains(loc, "reason=revoked") {
		t.Fatalf("after revocation: %d to %q, want 303 to the login page with reason=revoked", res.StatusCode, loc)
	}
	body := e.page(c, loc)
	contains(t, "login page", body, "Your token was revoked")
}

func TestForgedCookieRefused(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	u, _ := url.Parse(e.srv.URL + "/ui/")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "soulstack_ui", Value: e.forged, Path: "/ui"}})
	res, err := c.Get(e.srv.URL + "/ui/souls")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("forged cookie: status %d, want 303 to login", res.StatusCode)
	}
}

func TestLogoutDropsCookie(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	m := csrfRE.FindStringSubmatch(e.page(c, "/ui/"))
	if m == nil {
		t.Fatal("no CSRF token in the sign-out form")
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/ui/logout", strings.NewReader(url.Values{"csrf": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: status %d", res.StatusCode)
	}
	if status, _ := e.get(c, "/ui/"); status != http.StatusSeeOther {
		t.Fatalf("after logout the dashboard answered %d, want a redirect to login", status)
	}
}

// Login and logout are the only POSTs; a cross-site form cannot drive them.
func TestCrossSitePostRefused(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/ui/login", "/ui/logout"} {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader("token="+url.QueryEscape(e.token)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		res, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST %s: status %d, want 403", path, res.StatusCode)
		}
		if len(res.Cookies()) != 0 {
			t.Errorf("cross-site POST %s set cookies", path)
		}
	}
}

// The post-login redirect never leaves the UI.
func TestLoginNextStaysInsideUI(t *testing.T) {
	e := newEnv(t)
	for next, want := range map[string]string{
		"/ui/souls?status=pending": "/ui/souls?status=pending",
		"https://evil.example/ui/": "/ui/",
		"//evil.example/ui/":       "/ui/",
		"/\\evil.example":          "/ui/",
		"/v1/souls":                "/ui/",
		"/uix":                     "/ui/",
		"javascript:alert(1)":      "/ui/",
	} {
		res := e.login(e.client(), e.token, next)
		if got := res.Header.Get("Location"); got != want {
			t.Errorf("next=%q: redirect to %q, want %q", next, got, want)
		}
	}
}

func TestLoginPageWhenSignedInGoesOn(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	res, err := c.Get(e.srv.URL + "/ui/login?next=/ui/schedules")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/schedules" {
		t.Fatalf("login page with a session: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	res, err := e.session().Get(e.srv.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	csp := res.Header.Get("Content-Security-Policy")
	contains(t, "CSP", csp, "script-src 'self'", "frame-ancestors 'none'", "default-src 'none'")
	lacks(t, "CSP", csp, "unsafe-inline")
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", res.Header.Get("Cache-Control"))
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("missing nosniff")
	}
}

func TestUIRootRedirects(t *testing.T) {
	e := newEnv(t)
	res, err := e.client().Get(e.srv.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d to %q, want 301 to /ui/", res.StatusCode, res.Header.Get("Location"))
	}
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
