package ui_test

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/ui"
)

// Browser tests drive headless Chromium with --dump-dom: it loads a page,
// runs its scripts for a virtual time budget (virtual time stands still
// while requests are in flight), and prints the resulting DOM.
//
// Signing in: a test-only bootstrap page, served by the test server on the
// UI's origin (never by the UI itself), holds the login form with the token
// and submits it from script; the UI's real login handler sets the cookie
// and redirects to the page under test, which Chromium loads with that
// cookie. The token never appears in a URL.

// chromiumPath finds Chromium, or skips (fails in CI, where it must exist).
func chromiumPath(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("SOULSTACK_CHROMIUM"), "/usr/bin/chromium"}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			candidates = append(candidates, p)
		}
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c
		}
	}
	msg := "browser test needs Chromium: install it with `apt-get install -y chromium` (or set SOULSTACK_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// bootstrap is the test-only sign-in page: it posts the token to the UI's
// login form and lets the UI redirect to next.
var bootstrap = template.Must(template.New("b").Parse(`<!doctype html>
<html><body>
<form method="post" action="/ui/login">
<input type="hidden" name="token" value="{{.Token}}">
<input type="hidden" name="next" value="{{.Next}}">
</form>
<script>document.forms[0].submit();</script>
</body></html>`))

// browse serves the UI of e behind a test server that also serves the
// bootstrap page, signs Chromium in and returns the DOM of next. hook, when
// not nil, wraps the UI handler (to change the store while the page runs).
func browse(t *testing.T, e *env, next string, hook func(http.Handler) http.Handler) string {
	t.Helper()
	bin := chromiumPath(t)
	var h http.Handler = e.ui.Handler()
	if hook != nil {
		h = hook(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", h)
	mux.HandleFunc("GET /test/signin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		bootstrap.Execute(w, map[string]string{"Token": e.token, "Next": next})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=10000", "--dump-dom", srv.URL+"/test/signin")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String(), 2000))
	}
	dom := string(out)
	if strings.Contains(dom, `id="login-form"`) || strings.Contains(dom, "document.forms[0].submit") {
		t.Fatalf("chromium did not get past sign-in; DOM:\n%s\nstderr:\n%s", tail(dom, 3000), tail(stderr.String(), 2000))
	}
	return dom
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func TestBrowserDashboard(t *testing.T) {
	e := newEnv(t)
	dom := browse(t, e, "/ui/", nil)
	contains(t, "dashboard DOM", dom,
		"<h1>Dashboard</h1>",
		`<span class="badge st-connected">connected</span></a> <b>2</b>`,
		`<span class="badge st-error_locked">error_locked</span></a> <b>1</b>`,
		`<a href="/ui/" aria-current="page">Dashboard</a>`,
		"vera-viewer",
		`href="/ui/runs/`+runRestart+`"`,
		`<span class="badge st-failure">FAILURE</span>`,
	)
	lacks(t, "dashboard DOM", dom, xss)
}

// domCellRE captures a grid cell's class and host in a DOM serialized by
// Chromium.
var domCellRE = regexp.MustCompile(`<td class="cell (st-[a-z_]+)" data-sid="([^"]+)">`)

func TestBrowserRunGrid(t *testing.T) {
	e := newEnv(t)
	dom := browse(t, e, "/ui/runs/"+runRestart, nil)
	contains(t, "run DOM", dom,
		`<table class="grid" id="grid">`,
		`<span class="badge st-failed">failed</span>`,
		`<tr class="row st-failed" data-path="2">`,
		`<span class="wave">w2</span>`,
		`<details id="c2-7765622d322e6578616d706c65" class="result">`,
		"redis-server did not come back",
	)
	cells := map[string]int{}
	for _, m := range domCellRE.FindAllStringSubmatch(dom, -1) {
		cells[m[1]]++
	}
	want := map[string]int{"st-ok": 3, "st-changed": 1, "st-failed": 1, "st-skipped": 1, "st-none": 3}
	if fmt.Sprint(cells) != fmt.Sprint(want) {
		t.Errorf("grid cells by class = %v, want %v", cells, want)
	}
	lacks(t, "run DOM", dom, xss, "data-refreshed") // finished: no live refresh
}

// The page of a running run updates itself: the test finishes the run in
// the store when the page first polls, and the DOM Chromium ends with shows
// the new result and the final status without a reload.
func TestBrowserRunLiveUpdate(t *testing.T) {
	e := newEnv(t)
	var once sync.Once
	hook := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ui/runs/"+runQueue+"/live" {
				once.Do(func() { finishQueueRun(t, e) })
			}
			h.ServeHTTP(w, r)
		})
	}
	dom := browse(t, e, "/ui/runs/"+runQueue, hook)
	contains(t, "live run DOM", dom,
		`data-live="/ui/runs/`+runQueue+`/live"`,
		`data-state="finished"`,
		`<div class="live-root" data-finished="true">`,
		`<span id="run-status"><span class="badge st-succeeded">succeeded</span></span>`,
		`<td class="cell st-changed" data-sid="web-2.example">`,
		`<td class="cell st-ok" data-sid="web-1.example">`,
	)
	if !regexp.MustCompile(`data-refreshed="[1-9]`).MatchString(dom) {
		t.Error("the page never refreshed itself")
	}
	lacks(t, "live run DOM", dom, `st-pending" data-sid`)
}

// finishQueueRun records web-2's result for the running queue create and
// commits it.
func finishQueueRun(t *testing.T, e *env) {
	ctx := context.Background()
	if err := e.st.RecordResults(ctx, []store.HostResult{{RunID: runQueue, Seq: 1, Path: "1", TaskName: "install redis",
		SID: "web-2.example", Wave: 1, Status: "changed", Changed: true}}); err != nil {
		t.Error(err)
	}
	if err := e.st.CommitRun(ctx, runQueue, map[string]any{"ok": true}, store.Snapshot{}, time.Now()); err != nil {
		t.Error(err)
	}
}

// With the engine's events, a running run's page refreshes on push: the
// poll is set far beyond the test's time budget, so only the event stream
// can bring the final state in.
func TestBrowserRunPushUpdate(t *testing.T) {
	eng := &fakeEngine{}
	e := newEnv(t, func(c *ui.Config) {
		c.Events = ui.Subscriber(eng.Subscribe)
		c.PollInterval = time.Hour
	})
	var finisher sync.WaitGroup
	var once sync.Once
	hook := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ui/runs/"+runQueue+"/events" {
				once.Do(func() {
					finisher.Go(func() {
						// Once the page is subscribed, the run finishes.
						for deadline := time.Now().Add(10 * time.Second); eng.subscribers(runQueue) == 0 && time.Now().Before(deadline); {
							time.Sleep(5 * time.Millisecond)
						}
						finishQueueRun(t, e)
						eng.publish(runQueue, "host")
						eng.end(runQueue)
					})
				})
			}
			h.ServeHTTP(w, r)
		})
	}
	dom := browse(t, e, "/ui/runs/"+runQueue, hook)
	finisher.Wait()
	contains(t, "pushed run DOM", dom,
		`data-sse="/ui/runs/`+runQueue+`/events"`,
		`<span id="run-status"><span class="badge st-succeeded">succeeded</span></span>`,
		`<td class="cell st-changed" data-sid="web-2.example">`,
		`data-state="finished"`,
	)
}
