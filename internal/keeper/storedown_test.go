package keeper_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
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
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+res.Token.Token)
		req.AddCookie(&http.Cookie{Name: "soulstack_ui", Value: res.Token.Token}) // the UI's session
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
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
