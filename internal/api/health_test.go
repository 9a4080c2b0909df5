package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

func TestHealthReadyMetrics(t *testing.T) {
	e := newEnv(t)
	e.addSoul("h1", store.SoulConnected)
	e.addSoul("h2", store.SoulPending)
	if st, b := e.do("GET", "/healthz", "", ""); st != http.StatusOK {
		t.Fatalf("healthz %d %s", st, b)
	}
	if st, b := e.do("GET", "/readyz", "", ""); st != http.StatusOK {
		t.Fatalf("readyz %d %s", st, b)
	}
	e.do("GET", "/v1/souls", e.tokens[auth.RoleViewer], "")
	st, b := e.do("GET", "/metrics", "", "")
	if st != http.StatusOK {
		t.Fatalf("metrics %d", st)
	}
	for _, want := range []string{
		`soulstack_api_request_duration_seconds_count{route="GET /v1/souls",status="200"} 1`,
		`soulstack_souls{status="connected"} 1`,
		`soulstack_souls{status="pending"} 1`,
		`soulstack_souls{status="rejected"} 0`,
		`soulstack_store_up 1`,
		`soulstack_incarnations{status="error_locked"} 0`,
		`soulstack_incarnations{status="ready"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// A closed store: not ready, still alive.
	e.st.Close()
	st, b = e.do("GET", "/readyz", "", "")
	e.wantError("GET", "/readyz", http.StatusServiceUnavailable, "unavailable", b, st)
	if st, _ := e.do("GET", "/healthz", "", ""); st != http.StatusOK {
		t.Fatalf("healthz with the store down: %d", st)
	}
	if _, b := e.do("GET", "/metrics", "", ""); !strings.Contains(string(b), "soulstack_store_up 0") {
		t.Error("metrics do not show the store down")
	}
}

// TestOpenAPICoversRoutes checks that every registered route is in the
// OpenAPI document with its role, and the document has no stale routes.
func TestOpenAPICoversRoutes(t *testing.T) {
	e := newEnv(t)
	st, b := e.do("GET", "/v1/openapi.json", "", "")
	if st != http.StatusOK {
		t.Fatalf("openapi %d", st)
	}
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi document: %v (version %q)", err, doc.OpenAPI)
	}
	seen := map[string]bool{}
	for _, rt := range e.api.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		seen[strings.ToLower(method)+" "+path] = true
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Errorf("%s is not in openapi.json", rt.Pattern)
			continue
		}
		if rt.Public {
			continue
		}
		if perm, ok := op["x-required-permission"].(string); !ok || perm != string(rt.Permission) {
			t.Errorf("%s: openapi x-required-permission %q, route needs %q", rt.Pattern, perm, rt.Permission)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if !seen[method+" "+path] {
				t.Errorf("openapi.json documents %s %s, which no route serves", strings.ToUpper(method), path)
			}
		}
	}
}
