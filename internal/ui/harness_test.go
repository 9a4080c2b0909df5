package ui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/ui"
)

// Seeded identifiers.
const (
	runCreate  = "11111111-0000-4000-8000-000000000001" // cache: committed create
	runRestart = "11111111-0000-4000-8000-000000000002" // cache: failed rolling restart
	runQueue   = "11111111-0000-4000-8000-000000000003" // queue: running
	taskID     = "22222222-0000-4000-8000-000000000001" // fence_node: failed with a log
	commit     = "0123456789abcdef0123456789abcdef01234567"
	// xss is stored wherever operators or hosts control text; it must only
	// ever come back escaped.
	xss = `<script>alert("pwned")</script>`
)

// env is the UI on a real SQLite store seeded through the store API, served
// on loopback the way the keeper mounts it.
type env struct {
	t       *testing.T
	st      *sqlite.Store
	auth    *auth.Authority
	srv     *httptest.Server
	ui      *ui.UI
	token   string // viewer
	revoked string
	expired string
	forged  string // signed by another keeper's key
	now     time.Time
}

type envOption func(*ui.Config)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, auth: a, now: time.Now().UTC()}
	viewer, err := a.CreateArchon(ctx, "vera-viewer", auth.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	e.token = e.issue(a, viewer)
	rv, err := a.IssueToken(ctx, viewer, time.Hour, "to revoke")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, rv.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	e.revoked = rv.Token
	past, err := auth.New(ctx, st, keyFile, auth.WithClock(func() time.Time { return time.Now().Add(-3 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	e.expired = e.issue(past, viewer)
	e.forged = forgedToken(t, viewer)
	seed(t, st, e.now)

	cfg := ui.Config{Store: st, Auth: a, PollInterval: 200 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	u, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.ui = u
	mux := http.NewServeMux()
	mux.Handle("/ui/", u.Handler())
	mux.Handle("/ui", u.Handler())
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) issue(a *auth.Authority, ar store.Archon) string {
	e.t.Helper()
	tok, err := a.IssueToken(context.Background(), ar, time.Hour, "ui test")
	if err != nil {
		e.t.Fatal(err)
	}
	return tok.Token
}

// forgedToken is a well-formed token for ar signed by a different keeper.
func forgedToken(t *testing.T, ar store.Archon) string {
	t.Helper()
	ctx := context.Background()
	other, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherKey := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, other, otherKey); err != nil {
		t.Fatal(err)
	}
	oa, err := auth.New(ctx, other, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.CreateArchon(ctx, ar); err != nil {
		t.Fatal(err)
	}
	tok, err := oa.IssueToken(ctx, ar, time.Hour, "forged")
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// client is an HTTP client that keeps cookies and does not follow
// redirects (tests look at them).
func (e *env) client() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login posts token to the login form with c and returns the response.
func (e *env) login(c *http.Client, token, next string) *http.Response {
	e.t.Helper()
	form := url.Values{"token": {token}}
	if next != "" {
		form.Set("next", next)
	}
	res, err := c.PostForm(e.srv.URL+"/ui/login", form)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// session is a client signed in with the viewer token.
func (e *env) session() *http.Client {
	e.t.Helper()
	c := e.client()
	if res := e.login(c, e.token, ""); res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login: status %d, want 303", res.StatusCode)
	}
	return c
}

// get fetches path with c and returns status and body.
func (e *env) get(c *http.Client, path string) (int, string) {
	e.t.Helper()
	res, err := c.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// page fetches path with c and fails unless it is 200.
func (e *env) page(c *http.Client, path string) string {
	e.t.Helper()
	status, body := e.get(c, path)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s: status %d, want 200\n%s", path, status, body)
	}
	return body
}

// contains fails for each want missing from body.
func contains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", what, w)
		}
	}
}

// lacks fails for each unwanted string present in body.
func lacks(t *testing.T, what, body string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(body, w) {
			t.Errorf("%s: must not contain %q", what, w)
		}
	}
}
