package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/ui"
)

func TestDashboard(t *testing.T) {
	e := newEnv(t)
	body := e.page(e.session(), "/ui/")
	contains(t, "dashboard", body,
		// souls by status: 2 connected, 1 disconnected, 1 pending
		`<span class="badge st-connected">connected</span></a> <b>2</b>`,
		`<span class="badge st-disconnected">disconnected</span></a> <b>1</b>`,
		`<span class="badge st-pending">pending</span></a> <b>1</b>`,
		// incarnations by status, the locked one called out
		`<span class="badge st-error_locked">error_locked</span></a> <b>1</b>`,
		`<span class="badge st-applying">applying</span></a> <b>1</b>`,
		`Locked after a failure: <a href="/ui/incarnations/cache">cache</a>`,
		// recent runs and procedure tasks
		`href="/ui/runs/`+runRestart+`"`, `href="/ui/runs/`+runQueue+`"`,
		`href="/ui/tasks/`+taskID+`"`, `<span class="badge st-failure">FAILURE</span>`,
	)
}

func TestEmptyStatesAreFriendly(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := a.CreateArchon(ctx, "root", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.IssueToken(ctx, ar, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := a.StartSession(ctx, tok.Token, auth.SessionLimits{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ui.New(ui.Config{Store: st, Auth: a})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/ui/":             "No soul has joined yet",
		"/ui/souls":        "No soul has joined yet",
		"/ui/services":     "No service registered yet",
		"/ui/incarnations": "No incarnation yet",
		"/ui/runs":         "No run yet",
		"/ui/procedures":   "No procedure yet",
		"/ui/tasks":        "No procedure task yet",
		"/ui/schedules":    "No schedule",
	} {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(&http.Cookie{Name: "soulstack_ui", Value: sess.ID})
		rec := httptest.NewRecorder()
		u.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d", path, rec.Code)
		}
		contains(t, path, rec.Body.String(), want, `class="empty"`)
	}
}

func TestSoulsPages(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	list := e.page(c, "/ui/souls")
	contains(t, "souls", list, `<a href="/ui/souls/web-1.example">web-1.example</a>`, "10.0.0.1", "debian", "redhat",
		`<a class="coven" href="/ui/souls?coven=web">web</a>`, "0.1.0", "2m ago")

	filtered := e.page(c, "/ui/souls?coven=db")
	contains(t, "souls?coven=db", filtered, "db-1.example")
	lacks(t, "souls?coven=db", filtered, `href="/ui/souls/web-1.example"`)
	pending := e.page(c, "/ui/souls?status=pending")
	contains(t, "souls?status=pending", pending, "new-host")
	lacks(t, "souls?status=pending", pending, `href="/ui/souls/db-1.example"`)
	if got := e.page(c, "/ui/souls?sid=nothing-like-this"); !strings.Contains(got, "No soul matches") {
		t.Error("a filter matching nothing does not say so")
	}

	detail := e.page(c, "/ui/souls/web-1.example")
	contains(t, "soul", detail, "<code>os.family</code></td><td>debian</td>", "<code>network.primary_ip</code></td><td>10.0.0.1</td>",
		"<code>os.arch</code>", `<a href="/ui/incarnations/cache">cache</a>`, `<a href="/ui/incarnations/queue">queue</a>`)
	lacks(t, "soul", detail, "key-web-1.example") // the soul's key is not shown
}

func TestServicePages(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	contains(t, "services", e.page(c, "/ui/services"), `<a href="/ui/services/redis">redis</a>`,
		"file:///srv/git/redis.git", "v1.2.0", "0123456789ab", "Redis with sentinel")
	contains(t, "service", e.page(c, "/ui/services/redis"), "file:///srv/git/redis.git", "v1.2.0", commit,
		`<a href="/ui/incarnations/cache">cache</a>`, `<a href="/ui/incarnations/queue">queue</a>`)
}

// TestServiceGitPasswordHidden: a git URL with credentials is shown without
// its password, as the API shows it: any viewer reads these pages.
func TestServiceGitPasswordHidden(t *testing.T) {
	e := newEnv(t)
	if err := e.st.CreateService(context.Background(), store.Service{
		Name: "private", Git: "https://deploy:hunter2@git.example.com/ops/private.git", Ref: "main", Commit: commit,
	}); err != nil {
		t.Fatal(err)
	}
	c := e.session()
	for _, path := range []string{"/ui/services", "/ui/services/private"} {
		body := e.page(c, path)
		contains(t, path, body, "https://deploy:****@git.example.com/ops/private.git")
		lacks(t, path, body, "hunter2")
	}
}

func TestIncarnationPages(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	list := e.page(c, "/ui/incarnations")
	contains(t, "incarnations", list, `<a href="/ui/incarnations/cache">cache</a>`, `<span class="badge st-error_locked">error_locked</span>`)
	locked := e.page(c, "/ui/incarnations?status=applying")
	contains(t, "incarnations?status=applying", locked, `href="/ui/incarnations/queue"`)
	lacks(t, "incarnations?status=applying", locked, `href="/ui/incarnations/cache"`)

	d := e.page(c, "/ui/incarnations/cache")
	contains(t, "incarnation", d,
		`<h1>cache <span class="badge st-error_locked">error_locked</span></h1>`,
		`id="lock-reason"`, "failed on web-2.example",
		// state, members with soul status, masked input
		`&#34;master&#34;: &#34;web-1.example&#34;`, `&#34;port&#34;: 6379`,
		`<a href="/ui/souls/db-1.example">db-1.example</a></td>`, `<span class="badge st-disconnected">`,
		`&#34;password&#34;: &#34;****&#34;`,
		// history timeline: the create committed master, note and port on three changed hosts
		`id="history"`, "<b>create</b>", "3 hosts", `<span class="badge st-changed">changed 3</span>`,
		"set <code>master</code> <code>note</code> <code>port</code>",
		// runs
		`href="/ui/runs/`+runRestart+`"`, `href="/ui/runs/`+runCreate+`"`,
	)
	runs := e.page(c, "/ui/runs?incarnation=cache")
	contains(t, "runs of cache", runs, `href="/ui/runs/`+runRestart+`"`, `href="/ui/runs/`+runCreate+`"`)
	lacks(t, "runs of cache", runs, runQueue)
	contains(t, "all runs", e.page(c, "/ui/runs"), runQueue, runRestart, runCreate)
	if status, body := e.get(c, "/ui/incarnations/nope"); status != http.StatusNotFound || !strings.Contains(body, `There is no incarnation &#34;nope&#34;`) {
		t.Errorf("unknown incarnation: %d", status)
	}
}

// cellRE captures one grid cell: its status class, host and (if it ran)
// status word and wave.
var cellRE = regexp.MustCompile(`(?s)<td class="cell (st-[a-z_]+)" data-sid="([^"]+)">\s*(?:<details[^>]*><summary[^>]*><span class="s">([a-z]+)</span> <span class="wave">w(\d+)</span>)?`)

// gridCells maps "path/sid" to "class status wave" for every cell of a
// run page.
func gridCells(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	rows := strings.Split(body, `<tr class="row `)
	for _, row := range rows[1:] {
		path := row[strings.Index(row, `data-path="`)+len(`data-path="`):]
		path = path[:strings.IndexByte(path, '"')]
		for _, m := range cellRE.FindAllStringSubmatch(row, -1) {
			out[path+"/"+m[2]] = strings.TrimSpace(m[1] + " " + m[3] + " " + m[4])
		}
	}
	return out
}

func TestRunGrid(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	body := e.page(c, "/ui/runs/"+runRestart)
	want := map[string]string{
		"1/db-1.example":    "st-ok ok 1",
		"1/web-1.example":   "st-ok ok 1",
		"1/web-2.example":   "st-ok ok 1",
		"2/db-1.example":    "st-none", // the rollout stopped before reaching it
		"2/web-1.example":   "st-changed changed 1",
		"2/web-2.example":   "st-failed failed 2",
		"2.1/db-1.example":  "st-none",
		"2.1/web-1.example": "st-skipped skipped 1",
		"2.1/web-2.example": "st-none",
	}
	got := gridCells(t, body)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("cell %s = %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("grid has %d cells, want %d: %v", len(got), len(want), got)
	}
	contains(t, "run", body,
		`<span id="run-status"><span class="badge st-failed">failed</span></span>`,
		`<tr class="row st-failed" data-path="2">`, `<td class="waves">1, 2</td>`, `<td class="task depth-1">wait for sync</td>`,
		`id="run-error">task &#34;restart replicas&#34; failed on web-2.example`,
		`id="failed-hosts"><a href="/ui/runs/`+runRestart+`/failed" id="failed-link">Failed on 1 host</a>: <a href="/ui/runs/`+runRestart+`/hosts/web-2.example">`,
		// the failed cell's output, behind a click
		"redis-server did not come back", `<pre class="stderr">Job for redis-server.service failed`,
		"· failed · rc 1 · wave 2 · 40ms", `<pre class="stdout">role:master</pre>`,
		`data-finished="true"`, "1m00s",
	)
	lacks(t, "finished run", body, "data-live=") // a finished run does not refresh itself
}

func TestLiveRunRefreshes(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	body := e.page(c, "/ui/runs/"+runQueue)
	contains(t, "running run", body, `data-live="/ui/runs/`+runQueue+`/live"`, `data-poll="200"`, `data-finished="false"`)
	lacks(t, "running run without events", body, "data-sse=")
	cells := gridCells(t, body)
	if cells["1/web-2.example"] != "st-pending" || cells["1/web-1.example"] != "st-ok ok 1" {
		t.Errorf("live grid: %v; want web-2 pending, web-1 ok", cells)
	}

	// The fragment is the refreshable part only, and follows the store.
	frag := e.page(c, "/ui/runs/"+runQueue+"/live")
	lacks(t, "fragment", frag, "<html", "<header")
	contains(t, "fragment", frag, `<div class="live-root" data-finished="false">`)
	if err := e.st.RecordResults(t.Context(), []store.HostResult{{RunID: runQueue, Seq: 1, Path: "1", TaskName: "install redis",
		SID: "web-2.example", Wave: 1, Status: "changed", Changed: true}}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.CommitRun(t.Context(), runQueue, map[string]any{}, store.Snapshot{}, e.now); err != nil {
		t.Fatal(err)
	}
	frag = e.page(c, "/ui/runs/"+runQueue+"/live")
	contains(t, "fragment after commit", frag, `data-finished="true"`, `<span class="badge st-succeeded">succeeded</span>`)
	if got := gridCells(t, frag)["1/web-2.example"]; got != "st-changed changed 1" {
		t.Errorf("web-2 after its result: %q", got)
	}
}

func TestCheckerPages(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	contains(t, "procedures", e.page(c, "/ui/procedures"), `<a href="/ui/procedures/fence_node">fence_node</a>`)
	contains(t, "procedure", e.page(c, "/ui/procedures/fence_node"),
		`<pre class="source" id="source">vars:`, "node: {type: string}", "<code>*/5 * * * *</code>", `href="/ui/tasks/`+taskID+`"`)
	contains(t, "tasks", e.page(c, "/ui/tasks"), `href="/ui/tasks/`+taskID+`"`, "step check: AttemptsLimitReached")
	if got := e.page(c, "/ui/tasks?status=SUCCESS"); !strings.Contains(got, "No task matches") {
		t.Error("status filter matching nothing does not say so")
	}
	task := e.page(c, "/ui/tasks/"+taskID)
	contains(t, "task", task, `<span class="badge st-failure">FAILURE</span>`, `id="step-log"`,
		"souls list → 3 souls", "attempt 1/3: expect failed", `&#34;seen&#34;: &#34;disconnected&#34;`,
		`<tr class="st-error">`, `&#34;node&#34;: &#34;web-2.example&#34;`, `data-finished="true"`)
	contains(t, "schedules", e.page(c, "/ui/schedules"), "<code>*/5 * * * *</code>", `<a href="/ui/procedures/fence_node">`, "db-1.example")
}

// Text that hosts and operators control (facts, output, state, procedure
// source, logs) is rendered as text on every page.
func TestUntrustedTextIsEscaped(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	for _, path := range []string{"/ui/souls/web-1.example", "/ui/runs/" + runRestart, "/ui/incarnations/cache",
		"/ui/procedures/fence_node", "/ui/tasks/" + taskID} {
		body := e.page(c, path)
		lacks(t, path, body, xss, "<script>alert")
		contains(t, path, body, "&lt;script&gt;alert(")
	}
	// A hostile path is escaped on the not-found page too.
	status, body := e.get(c, "/ui/%3Cscript%3Ealert(1)%3C/script%3E")
	if status != http.StatusNotFound {
		t.Errorf("unknown page: %d, want 404", status)
	}
	lacks(t, "404 page", body, "<script>alert(1)")
}

func TestNotFoundPages(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	for _, path := range []string{"/ui/souls/ghost", "/ui/services/ghost", "/ui/runs/ghost", "/ui/procedures/ghost",
		"/ui/tasks/ghost", "/ui/elsewhere"} {
		status, body := e.get(c, path)
		if status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, status)
		}
		contains(t, path, body, "Not found", "Back to the dashboard")
	}
}

// A store that is down is a 503 page, not a trip to the login page.
func TestStoreDownIs503(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	e.st.Close()
	status, body := e.get(c, "/ui/souls")
	if status != http.StatusServiceUnavailable {
		t.Fatalf("store closed: status %d, want 503\n%s", status, body)
	}
	contains(t, "503 page", body, "Keeper store unavailable")
}

func TestStaticAssets(t *testing.T) {
	e := newEnv(t)
	c := e.client() // the login page needs them before any session
	for path, want := range map[string]string{"/ui/static/style.css": "text/css", "/ui/static/live.js": "javascript"} {
		res, err := c.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), want) {
			t.Errorf("%s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// TestRunPageSaysNoHost (SPEC §6): a step that targeted no host has its
// row on the run page, in task order, with the note saying why.
func TestRunPageSaysNoHost(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	if err := e.st.RecordRunNote(t.Context(), store.RunNote{RunID: runRestart, Seq: 9, Path: "3", TaskName: "db only", Note: "on: [db] matched no member of this incarnation"}); err != nil {
		t.Fatal(err)
	}
	body := e.page(c, "/ui/runs/"+runRestart)
	contains(t, "run", body, `<tr class="row st-none" data-path="3">`,
		`<td class="task depth-0">db only <span class="muted small note">— no host: on: [db] matched no member of this incarnation</span></td>`)
	if cells := gridCells(t, body); cells["3/web-1.example"] != "st-none" {
		t.Errorf("cell of the no-host task = %q, want st-none", cells["3/web-1.example"])
	}
}
