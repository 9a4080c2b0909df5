package api_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// redocly returns the @redocly/cli that scripts/test-deps.sh installs: the
// version it pins, in the cache directory it installs into, or
// $SOULSTACK_REDOCLY.
func redocly(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SOULSTACK_REDOCLY"); p != "" {
		return p
	}
	deps, err := os.ReadFile(filepath.Join("..", "..", "scripts", "test-deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^REDOCLY_VERSION=(\S+)$`).FindSubmatch(deps)
	if m == nil {
		t.Fatal("scripts/test-deps.sh pins no REDOCLY_VERSION")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "soulstack-test", "redocly-"+string(m[1]), "node_modules", ".bin", "redocly")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("@redocly/cli %s is needed (scripts/test-deps.sh installs it): %v", m[1], err)
	}
	return p
}

// The served OpenAPI document passes `redocly lint` with the recommended
// rules, as a user linting it would run it: no error, no warning beyond the
// ones .redocly.lint-ignore.yaml lists with their reasons.
func TestOpenAPIRedoclyLint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, redocly(t), "lint", "--format=stylish", "--config", "redocly.yaml", "openapi.json")
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint openapi.json: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("valid")) || regexp.MustCompile(`(?m)^\s*\d+:\d+\s+(error|warning)\s`).Match(out) {
		t.Fatalf("redocly lint openapi.json:\n%s", out)
	}
}

// docs/api/index.html, the rendered API reference, is `make api-docs`'s
// output for the current openapi.json (rerun it after changing the API).
func TestAPIReferenceUpToDate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "index.html")
	cmd := exec.CommandContext(ctx, redocly(t), "build-docs", "openapi.json", "--output", out)
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redocly build-docs: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "api", "index.html"))
	if err != nil {
		t.Fatalf("%v (make api-docs writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/api/index.html is not the rendering of internal/api/openapi.json: run make api-docs")
	}
	if !bytes.Contains(got, []byte("Soul Stack Operator API")) {
		t.Fatal("the API reference does not carry the document's title")
	}
}
