package keeper_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestStoreDownAnswers503 serves a keeper whose PostgreSQL connections go
// through a proxy, then cuts the proxy (a dead database server): every API
// call answers 503 unavailable — never 500 — /readyz fails, the UI says
// the store is unavailable and the keeper stops leading within seconds.
// No route of the API (every one its OpenAPI document lists) and no page
// of the UI answers 500; /metrics is served with soulstack_store_up 0.
// With the database back, the keeper is ready and leads again and answers
// as before.
func TestStoreDownAnswers503(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.FreshDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startBalancer(t, []string{u.Host})
	u.Host = proxy.addr()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.KeeperID = "keeper-1"
	cfg.DatabaseURL = u.String()
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	k, addr := serveKeeper(t, cfg, "keeper-1")
	cl, err := apiclient.New("http://"+addr, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return cl.Ready(ctx) == nil }, "keeper ready")

	routes := []struct{ method, path, body string }{
		{"GET", "/v1/whoami", ""},
		{"GET", "/v1/souls", ""},
		{"GET", "/v1/souls/web-1", ""},
		{"GET", "/v1/services", ""},
		{"GET", "/v1/incarnations", ""},
		{"GET", "/v1/incarnations/web", ""},
		{"GET", "/v1/runs/0123456789", ""},
		{"GET", "/v1/procedures", ""},
		{"GET", "/v1/tasks", ""},
		{"GET", "/v1/schedules", ""},
		{"GET", "/v1/audit", ""},
		{"POST", "/v1/join-tokens", `{"covens": ["web"], "ttl": "1h"}`},
		{"POST", "/v1/incarnations", `{"name": "web", "service": "web"}`},
		{"PUT", "/v1/procedures/p", `{"source": "steps:\n  s:\n    action:\n      log: hi\n"}`},
	}
	session := uiSession(t, addr, res.Token.Token)
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+res.Token.Token)
		req.AddCookie(session) // the UI's session
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Every other route of the API (from its OpenAPI document, so a new
	// route is covered as soon as it is documented) and every page of the
	// UI: with the store down none may answer 500.
	status, doc := do("GET", "/v1/openapi.json", "")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d", status)
	}
	everyRoute := documentedRoutes(t, doc)
	for _, page := range uiPages {
		everyRoute = append(everyRoute, apiRoute{method: "GET", path: page})
	}

	testutil.WaitFor(t, 10*time.Second, k.IsLeader, "keeper-1 to lead")
	proxy.setDown(true)
	cut := time.Now()
	for _, r := range routes {
		status, body := do(r.method, r.path, r.body)
		if status != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"unavailable"`) {
			t.Errorf("%s %s with the store down: %d %s, want 503 unavailable", r.method, r.path, status, body)
		}
	}
	answers := map[int]int{}
	for _, r := range everyRoute {
		status, body := do(r.method, r.path, r.body)
		answers[status]++
		switch {
		case status >= 500 && status != http.StatusServiceUnavailable:
			t.Errorf("%s %s with the store down: %d %.200s, want 503 (or an answer that needs no store)", r.method, r.path, status, body)
		case !r.public && status != http.StatusServiceUnavailable:
			t.Errorf("%s %s (authenticated) with the store down: %d %.200s, want 503", r.method, r.path, status, body)
		}
	}
	t.Logf("%d routes with the store down, answers by status: %v", len(everyRoute), answers)
	// The metrics are still served, saying the store is down.
	if status, body := do("GET", "/metrics", ""); status != http.StatusOK || !strings.Contains(body, "\nsoulstack_store_up 0\n") {
		t.Errorf("/metrics with the store down: %d, want 200 with soulstack_store_up 0", status)
	}
	if status, body := do("GET", "/readyz", ""); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the store down: %d %s", status, body)
	}
	if status, body := do("GET", "/ui/", ""); status != http.StatusServiceUnavailable || !strings.Contains(strings.ToLower(body), "store unavailable") {
		t.Errorf("/ui/ with the store down: %d %s", status, body)
	}

	// Cut off from the database, the keeper stops leading (singleton work
	// stops) within its ping: before the server could give the lock to
	// another keeper after a real partition (keepalive, about 6 s).
	testutil.WaitFor(t, 4*time.Second, func() bool { return !k.IsLeader() }, "keeper-1 to stop leading")
	t.Logf("cut off from the database, keeper-1 stopped leading after %s", time.Since(cut).Round(time.Millisecond))

	proxy.setDown(false)
	testutil.WaitFor(t, 20*time.Second, func() bool { return cl.Ready(ctx) == nil }, "keeper ready again")
	testutil.WaitFor(t, 10*time.Second, k.IsLeader, "keeper-1 to lead again")
	for _, r := range routes[:3] {
		if status, body := do(r.method, r.path, r.body); status >= 500 {
			t.Errorf("%s %s with the store back: %d %s", r.method, r.path, status, body)
		}
	}
}

// uiPages are the web UI's pages, each asked for with the store down.
var uiPages = []string{
	"/ui/", "/ui/souls", "/ui/souls/web-1", "/ui/services", "/ui/services/web", "/ui/incarnations",
	"/ui/incarnations/web", "/ui/incarnations/new", "/ui/incarnations/web/start", "/ui/runs", "/ui/runs/0123456789",
	"/ui/runs/0123456789/hosts/web-1", "/ui/runs/0123456789/failed", "/ui/runs/0123456789/live",
	"/ui/procedures", "/ui/procedures/p", "/ui/tasks", "/ui/tasks/t", "/ui/tasks/t/live", "/ui/join-tokens",
}

// apiRoute is one documented method and path, its parameters filled in.
type apiRoute struct {
	method, path, body string
	public             bool // needs no token
}

// documentedRoutes lists every operation of the OpenAPI document doc, its
// path parameters filled with a plausible name and a JSON object as body.
func documentedRoutes(t *testing.T, doc string) []apiRoute {
	t.Helper()
	var spec struct {
		Paths map[string]map[string]struct {
			Security *[]any `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(doc), &spec); err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	var out []apiRoute
	for path, ops := range spec.Paths {
		for method, op := range ops {
			method = strings.ToUpper(method)
			switch method {
			case "GET", "POST", "PUT", "PATCH", "DELETE":
			default:
				continue
			}
			r := apiRoute{method: method, path: param.ReplaceAllString(path, "web"), public: op.Security != nil && len(*op.Security) == 0}
			if method != "GET" && method != "DELETE" {
				r.body = "{}"
			}
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b apiRoute) int { return strings.Compare(a.path+" "+a.method, b.path+" "+b.method) })
	if len(out) < 50 {
		t.Fatalf("the OpenAPI document lists %d operations; expected the whole API", len(out))
	}
	return out
}

// uiSession signs in to the UI at addr with token and returns the session
// cookie it set.
func uiSession(t *testing.T, addr, token string) *http.Cookie {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm("http://"+addr+"/ui/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "soulstack_ui" && ck.Value != "" {
			return ck
		}
	}
	t.Fatalf("UI login: %s, no session cookie", resp.Status)
	return nil
}
