//go:build screenshots

package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/ui/uiseed"
)

// TestScreenshots regenerates docs/screenshots/*.png (`make screenshots`,
// which builds with the screenshots tag): the browser tests' environment
// (a real Operator API, catalog, engine and Checker over SQLite) with a
// fleet of 300 souls and a 300-host rolling run, each main page loaded in
// headless Chromium signed in as an admin and captured at 1280×900.
func TestScreenshots(t *testing.T) {
	out := os.Getenv("SCREENSHOTS_DIR")
	if out == "" {
		out = filepath.Join("..", "..", "docs", "screenshots")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newActEnv(t)
	ctx := context.Background()
	now := time.Now().UTC()
	if err := uiseed.Fleet(ctx, e.st, 300, now); err != nil {
		t.Fatal(err)
	}
	run, err := uiseed.BigRun(ctx, e.st, "edge", 300, now)
	if err != nil {
		t.Fatal(err)
	}
	// A second committed run of site so its history shows a state diff.
	acc, err := e.api.StartRun(ctx, "site", apitypes.StartRunRequest{Scenario: "create",
		Input: map[string]any{"port": 8080, "banner": "welcome to site"}})
	if err != nil {
		t.Fatal(err)
	}
	small := e.wait(acc.ApplyID).ID
	if _, err := e.api.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "greet", Cron: "*/15 * * * *",
		Vars: map[string]any{"who": "on-call"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.ExecuteProcedure(ctx, "greet", map[string]any{"who": "world"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ name, page string }{
		{"dashboard", "/ui/"},
		{"souls", "/ui/souls"},
		{"souls-filtered", "/ui/souls?status=connected&coven=dc2&fact=os.family&value=redhat"},
		{"incarnation", "/ui/incarnations/site"},
		{"new-incarnation", "/ui/incarnations/new?name=shop&service=web&covens=web"},
		{"run-form", "/ui/incarnations/site/start?scenario=create"},
		{"run-grid", "/ui/runs/" + small},
		{"run-grouped", "/ui/runs/" + run},
		{"run-failed-hosts", "/ui/runs/" + run + "/failed"},
		{"run-host-diff", "/ui/runs/" + run + "/hosts/" + uiseed.SID(13)},
		{"procedure", "/ui/procedures/greet"},
	} {
		screenshot(t, e, s.page, filepath.Join(out, s.name+".png"))
	}
}

// screenshot signs Chromium in as an admin (the bootstrap page of the
// browser tests), lets the UI redirect to page and captures it.
func screenshot(t *testing.T, e *actEnv, page, file string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", e.h)
	mux.HandleFunc("GET /test/signin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		bootstrap.Execute(w, map[string]string{"Token": e.tokens[auth.RoleAdmin], "Next": page})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, chromiumPath(t),
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(),
		"--window-size=1280,900", "--virtual-time-budget=5000", "--screenshot="+abs, srv.URL+"/test/signin")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", page, err, tail(stderr.String(), 2000))
	}
	fi, err := os.Stat(abs)
	if err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot of %s: %v (%d bytes)", page, err, sizeOf(fi))
	}
	t.Logf("%s → %s (%d KiB)", page, file, fi.Size()>>10)
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}
