package ui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	_ "github.com/soulstack/soulstack/internal/module/core" // modules the DSL validates against
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/ui"
)

// webService has a create scenario with typed input of every kind, a
// scenario whose task the simulated souls fail, and a quick one.
var webService = map[string]string{
	"service.yml": "name: web\n",
	"scenario/create/main.yml": `
input:
  banner: {type: string, default: hello, description: "The motd banner"}
  port: {type: integer, required: true}
  ratio: {type: number, default: 0.5}
  debug: {type: boolean, default: true}
  peers: {type: list, default: []}
  labels: {type: map}
  token: {type: string, secret: true}
state_changes:
  sets: {banner: "${ input.banner }"}
tasks:
  - name: motd
    module: core.file.present
    params: {path: /etc/motd, content: "${ input.banner }"}
`,
	"scenario/break/main.yml": `
tasks:
  - name: breaks
    module: core.exec.run
    params: {command: "false"}
`,
	"scenario/slow/main.yml": `
tasks:
  - name: drain
    module: core.exec.run
    params: {command: drain --wait}
`,
}

// actEnv is the UI mounted on a real Operator API (as the keeper mounts
// it) over a real SQLite store, a real catalog with a git service and the
// engine driving simulated souls, with a signed-in Archon of each role.
type actEnv struct {
	t      *testing.T
	st     *sqlite.Store
	srv    *httptest.Server
	h      http.Handler // the keeper's handler: /v1 and /ui
	ui     *ui.UI
	eng    *engine.Engine
	tokens map[auth.Role]string
	api    *apiclient.Client // admin
}

func newActEnv(t *testing.T, stubs ...dispatch.Stub) *actEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keyFile := filepath.Join(dir, "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(catalog.Config{Dir: filepath.Join(dir, "services"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	sim := dispatch.NewSim(nil, stubs)
	eng, err := engine.New(engine.Config{Store: st, Dispatcher: sim, Local: sim, Services: cat, KeeperID: "ui-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	ck, err := checker.New(checker.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	srvAPI, err := api.New(api.Config{Store: st, Auth: a, Catalog: cat, Engine: eng, Checker: ck, Fingerprint: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ui.New(ui.Config{Store: st, Auth: a, API: srvAPI.Handler(), Services: cat, TLSPin: "sha256//pin=",
		Events: ui.Subscriber(eng.Subscribe), PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srvAPI.Mount("/ui/", u.Handler())
	srvAPI.Mount("/ui", u.Handler())
	e := &actEnv{t: t, st: st, ui: u, eng: eng, tokens: map[auth.Role]string{}}
	e.h = srvAPI.Handler()
	e.srv = httptest.NewServer(e.h)
	t.Cleanup(e.srv.Close)
	for _, r := range auth.Roles {
		ar, err := a.CreateArchon(ctx, string(r)+"-archon", r)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := a.IssueToken(ctx, ar, time.Hour, "ui test")
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[r] = tok.Token
	}
	e.api, err = apiclient.New(e.srv.URL, e.tokens[auth.RoleAdmin])
	if err != nil {
		t.Fatal(err)
	}

	repo := catalogtest.NewRepo(t)
	repo.Commit(webService, "v1")
	if _, err := e.api.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "web", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"a", "b"} {
		if err := st.UpsertSoul(ctx, store.Soul{SID: sid, Status: store.SoulConnected, Covens: []string{"web"}, PublicKey: []byte("k-" + sid)}); err != nil {
			t.Fatal(err)
		}
		sim.AddHost(dispatch.SimHost{SID: sid})
	}
	if err := st.UpsertSoul(ctx, store.Soul{SID: "newcomer", Status: store.SoulPending, PublicKey: []byte("pk")}); err != nil {
		t.Fatal(err)
	}
	acc, err := e.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "site", Service: "web", Covens: []string{"web"},
		Input: map[string]any{"port": 80}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(acc.ApplyID)
	if _, err := e.api.PutProcedure(ctx, "greet", greetProc); err != nil {
		t.Fatal(err)
	}
	return e
}

// greetProc is a procedure with a public var (who) and a private one.
const greetProc = `
vars:
  who:
    type: string
    visibility: public
  times:
    type: number
    visibility: public
    default: 1
  seen:
    type: array[string]
    default: []
steps:
  greet:
    action:
      log: "hello {{ who }}"
`

// wait waits for a run to finish.
func (e *actEnv) wait(id string) store.Run {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := e.eng.Wait(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return run
}

// lock makes "site" error_locked by a failed run and returns that run.
func (e *actEnv) lock() string {
	e.t.Helper()
	acc, err := e.api.StartRun(context.Background(), "site", apitypes.StartRunRequest{Scenario: "break"})
	if err != nil {
		e.t.Fatal(err)
	}
	if run := e.wait(acc.ApplyID); run.Status != store.RunFailed {
		e.t.Fatalf("break run: status %s, want failed", run.Status)
	}
	if inc := e.inc(); inc.Status != store.IncarnationErrorLocked {
		e.t.Fatalf("site: status %s, want error_locked", inc.Status)
	}
	return acc.ApplyID
}

func (e *actEnv) inc() store.Incarnation {
	e.t.Helper()
	inc, err := e.st.GetIncarnation(context.Background(), "site")
	if err != nil {
		e.t.Fatal(err)
	}
	return inc
}

// failStub makes the "breaks" task fail on every host.
var failStub = dispatch.Stub{Task: "breaks", Results: []domain.Result{{Failed: true, RC: 1, Msg: "it broke"}}}

// session is a cookie client signed in as role that does not follow
// redirects.
func (e *actEnv) session(role auth.Role) *http.Client {
	e.t.Helper()
	c := (&env{t: e.t}).client()
	res, err := c.PostForm(e.srv.URL+"/ui/login", url.Values{"token": {e.tokens[role]}})
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login as %s: status %d", role, res.StatusCode)
	}
	return c
}

func (e *actEnv) get(c *http.Client, path string) (int, string) {
	e.t.Helper()
	res, err := c.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a page of c's session.
func (e *actEnv) csrf(c *http.Client, page string) string {
	e.t.Helper()
	_, body := e.get(c, page)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no CSRF token on %s", page)
	}
	return m[1]
}

// post submits form to path as a same-origin browser would (Origin set)
// unless headers override; it returns the status, Location and body.
func (e *actEnv) post(c *http.Client, path string, form url.Values, headers map[string]string) (int, string, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}
