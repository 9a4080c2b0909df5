package api_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/auth"
)

// TestLoadShedding (issue 36): with every slot of api.max_in_flight held
// by requests still running, concurrent requests that cannot start
// within api.max_wait are answered 503 unavailable with Retry-After
// (counted in soulstack_api_shed_total), public routes and event streams
// are not held back, and once the slots free up requests are served.
func TestLoadShedding(t *testing.T) {
	e := newEnvWith(t, func(c *api.Config) { c.Load = api.Load{MaxInFlight: 2, MaxWait: 20 * time.Millisecond} })
	// Two slow uploads hold both slots: the handler waits for their body.
	var held sync.WaitGroup
	var pipes []*io.PipeWriter
	for range 2 {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/services", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.tokens[auth.RoleAdmin])
		req.Header.Set("Content-Type", "application/json")
		held.Add(1)
		go func() {
			defer held.Done()
			if resp, err := e.srv.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	release := func() {
		for _, pw := range pipes {
			pw.CloseWithError(io.ErrUnexpectedEOF)
		}
		held.Wait()
	}
	defer release()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.metricsText(), "soulstack_api_in_flight 2") {
		if time.Now().After(deadline) {
			t.Fatalf("the two uploads never held both slots:\n%s", e.metricsText())
		}
		time.Sleep(10 * time.Millisecond)
	}

	const n = 20
	type answer struct {
		status int
		retry  string
		body   string
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/souls", nil)
			req.Header.Set("Authorization", "Bearer "+e.tokens[auth.RoleViewer])
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers[i] = answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
		}()
	}
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusServiceUnavailable || a.retry != "1" || !strings.Contains(a.body, `"unavailable"`) || !strings.Contains(a.body, "busy") {
			t.Errorf("request %d while saturated: %d, Retry-After %q, %s", i, a.status, a.retry, a.body)
		}
	}
	if st, _ := e.do("GET", "/healthz", "", ""); st != http.StatusOK {
		t.Errorf("/healthz while saturated: %d", st)
	}
	if st, b := e.do("GET", "/v1/runs/nope/events", e.tokens[auth.RoleViewer], ""); st != http.StatusNotFound {
		t.Errorf("an event stream while saturated: %d %s (want it served: 404 for an unknown run)", st, b)
	}
	if m := e.metricsText(); !strings.Contains(m, "soulstack_api_shed_total 20") {
		t.Errorf("metrics do not count 20 shed requests:\n%s", grepLines(m, "soulstack_api_"))
	}

	release()
	for i := range 5 {
		if st, b := e.do("GET", "/v1/souls", e.tokens[auth.RoleViewer], ""); st != http.StatusOK {
			t.Errorf("request %d after the slots freed: %d %s", i, st, b)
		}
	}
}

// metricsText reads /metrics.
func (e *env) metricsText() string {
	e.t.Helper()
	_, b := e.do("GET", "/metrics", "", "")
	return string(b)
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
