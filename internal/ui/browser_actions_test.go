package ui_test

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// Browser action tests: Chromium signs in (a test page on the UI's origin
// posts the token to the real login form with fetch), then the same test
// page loads the UI page under test and looks for the action form by id;
// when the page has no such form, the DOM says no-form. (Submitting a form
// from a page that used fetch stalls headless Chromium's virtual time, so
// the allowed roles' actions go through submit in browser_click_test.go.)

var clickPage = template.Must(template.New("c").Parse(`<!doctype html>
<html><body><p id="clicking">…</p>
<script>
(async () => {
  await fetch("/ui/login", {method: "POST", redirect: "manual", body: new URLSearchParams({token: {{.Token}}})});
  const res = await fetch({{.Page}});
  const doc = new DOMParser().parseFromString(await res.text(), "text/html");
  const src = doc.getElementById({{.Form}});
  if (!src) { document.body.innerHTML = '<p id="no-form">no form (' + res.status + ')</p>'; return; }
  const form = document.importNode(src, true);
  for (const [k, v] of new URLSearchParams({{.Fill}})) {
    const el = form.querySelector('[name="' + k + '"]');
    if (el.type === "checkbox") { el.checked = v === "1"; } else { el.value = v; }
  }
  document.body.appendChild(form);
  form.requestSubmit();
})();
</script></body></html>`))

// click drives Chromium through one action as role: on page, submit the
// form with id form, filled with fill.
func click(t *testing.T, e *actEnv, role auth.Role, page, form string, fill url.Values) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", e.h)
	mux.HandleFunc("GET /test/click", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		clickPage.Execute(w, map[string]string{"Token": e.tokens[role], "Page": page, "Form": form, "Fill": fill.Encode()})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	return chromiumDOM(t, srv.URL+"/test/click")
}

// chromiumDOM loads u in headless Chromium and returns the final DOM.
func chromiumDOM(t *testing.T, u string) string {
	t.Helper()
	bin := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=10000", "--dump-dom", u)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String(), 2000))
	}
	return string(out)
}

func TestBrowserActionsViewer(t *testing.T) {
	e := newActEnv(t, failStub)
	e.lock()
	for _, c := range [][2]string{
		{"/ui/incarnations/site", "unlock-form"},
		{"/ui/incarnations/site/start?scenario=create", "run-form"},
		{"/ui/souls/newcomer", "accept-form"},
	} {
		dom := click(t, e, auth.RoleViewer, c[0], c[1], nil)
		contains(t, "viewer "+c[1], dom, `id="no-form"`)
	}
}

// A page on another site that posts the unlock form (even knowing the
// session's CSRF token) changes nothing: the browser does not send the
// SameSite=Strict cookie cross-site, and the UI checks Origin besides.
// Chromium runs in real time here (no virtual-time budget, which could
// end the page before the evil form's navigation began under load): the
// test waits, bounded, until the forged POST has been answered.
func TestBrowserForgedCrossSitePost(t *testing.T) {
	e := newActEnv(t, failStub)
	e.lock()
	token := e.csrf(e.session(auth.RoleOperator), "/ui/incarnations/site")
	var answered atomic.Int32 // forged POSTs the UI has finished answering
	var status atomic.Int32   // the status of the last one
	mux := http.NewServeMux()
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/ui/incarnations/site/unlock" {
			rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
			e.h.ServeHTTP(rec, r)
			status.Store(int32(rec.code))
			answered.Add(1)
			return
		}
		e.h.ServeHTTP(w, r)
	}))
	var evilURL atomic.Value // set after the servers start, read by their handlers
	mux.HandleFunc("GET /test/go", func(w http.ResponseWriter, r *http.Request) {
		// On the UI's origin: sign in, then visit the evil site.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><script>
(async () => {
  await fetch("/ui/login", {method: "POST", redirect: "manual", body: new URLSearchParams({token: %q})});
  location = %q;
})();
</script></body></html>`, e.tokens[auth.RoleOperator], evilURL.Load().(string))
	})
	victim := httptest.NewServer(mux) // 127.0.0.1
	defer victim.Close()
	var served atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body>
<form method="post" action="%s/ui/incarnations/site/unlock">
<input name="reason" value="pwned"><input name="csrf" value="%s"></form>
<script>document.forms[0].submit();</script></body></html>`, victim.URL, token)
	}))
	defer evil.Close()
	// Another site: "localhost" is not "127.0.0.1".
	evilURL.Store(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) + "/")
	stderr, ok := chromiumUntil(t, victim.URL+"/test/go", 60*time.Second, func() bool { return answered.Load() > 0 })
	if !ok {
		t.Fatalf("the forgery did not happen within 60 s (evil page served %d times, forged POSTs answered %d); chromium:\n%s",
			served.Load(), answered.Load(), tail(stderr, 2000))
	}
	if inc := e.inc(); inc.Status != store.IncarnationErrorLocked {
		t.Fatalf("a cross-site POST unlocked the incarnation (answered %d)", status.Load())
	}
	if c := status.Load(); c != http.StatusForbidden {
		t.Errorf("the forged POST was answered %d, want 403", c)
	}
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// chromiumUntil opens u in headless Chromium in real time and polls done
// every 20 ms until it holds or timeout passes, then stops Chromium (its
// process group, by the PID this test started). It returns Chromium's
// stderr and whether done held.
func chromiumUntil(t *testing.T, u string, timeout time.Duration, done func() bool) (string, bool) {
	t.Helper()
	bin := chromiumPath(t)
	cmd := exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), u)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ok := false
	deadline := time.Now().Add(timeout)
poll:
	for time.Now().Before(deadline) {
		if done() {
			ok = true
			break
		}
		select {
		case err := <-exited:
			exited <- err
			break poll
		case <-time.After(20 * time.Millisecond):
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	return stderr.String(), ok || done()
}
