package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
)

// TestWrongMethodIs405: a path a route serves, asked with another method,
// is a 405 with Allow listing the methods it takes (SPEC §14), not a 404;
// a path no route serves stays a 404.
func TestWrongMethodIs405(t *testing.T) {
	e := newEnv(t)
	tok := e.tokens[auth.RoleAdmin]
	for _, tt := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/souls", "GET, HEAD"},
		{"PUT", "/v1/schedules", "GET, HEAD, POST"},
		{"POST", "/v1/schedules/x", "DELETE"},
		{"PATCH", "/healthz", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(tt.method, e.srv.URL+tt.path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Allow"), tt.allow)
		}
	}
	st, b := e.do("DELETE", "/v1/souls", tok, "")
	d := e.wantError("DELETE", "/v1/souls", http.StatusMethodNotAllowed, "method_not_allowed", b, st)
	if !strings.Contains(d.Message, "GET") {
		t.Errorf("message %q does not name the allowed methods", d.Message)
	}
	st, b = e.do("GET", "/v1/nothing-here", tok, "")
	e.wantError("GET", "/v1/nothing-here", http.StatusNotFound, "not_found", b, st)
}
