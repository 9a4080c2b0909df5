package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
)

// TestErrorMessagesSayWhat: 4xx messages name what is wrong in the user's
// terms — what does not exist, which field wants which JSON — without Go
// type names or the same context twice.
func TestErrorMessagesSayWhat(t *testing.T) {
	e := newEnv(t)
	e.fleet()
	tok := e.tokens[auth.RoleAdmin]
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
		want               string
	}{
		{"GET", "/v1/services/nope", "", http.StatusNotFound, "not_found", `service "nope" does not exist`},
		{"POST", "/v1/incarnations/nope/runs", `{"scenario":"create"}`, http.StatusNotFound, "not_found", `incarnation "nope" does not exist`},
		{"GET", "/v1/procedures/nope", "", http.StatusNotFound, "not_found", `procedure "nope" does not exist`},
		{"POST", "/v1/incarnations/x/runs", `[]`, http.StatusBadRequest, "invalid", "request body must be a JSON object, not an array"},
		{"POST", "/v1/incarnations/x/runs", `{"scenario":"create","input":[]}`, http.StatusBadRequest, "invalid", `request field "input" must be a JSON object, not an array`},
		{"POST", "/v1/incarnations", `{"name":"x","service":"web","covens":"web"}`, http.StatusBadRequest, "invalid", `request field "covens" must be a JSON array of strings, not a string`},
		{"POST", "/v1/incarnations/x/runs", `{"scenario":"create","check":"yes"}`, http.StatusBadRequest, "invalid", `request field "check" must be true or false, not a string`},
	} {
		st, b := e.do(tc.method, tc.path, tok, tc.body)
		d := e.wantError(tc.method, tc.path, tc.status, tc.code, b, st)
		if !strings.Contains(d.Message, tc.want) || (st == http.StatusNotFound && d.Message != tc.want) {
			t.Errorf("%s %s %s: message %q, want it to contain %q", tc.method, tc.path, tc.body, d.Message, tc.want)
		}
	}

	body := `{"name":"web-prod","service":"web","covens":["web"],"input":{"banner":"managed"}}`
	if st, b := e.do("POST", "/v1/incarnations", tok, body); st != http.StatusAccepted {
		t.Fatalf("create: %d %s", st, b)
	}
	st, b := e.do("POST", "/v1/incarnations", tok, body)
	d := e.wantError("POST", "/v1/incarnations", http.StatusConflict, "conflict", b, st)
	if strings.Count(d.Message, "creating incarnation") != 1 || !strings.Contains(d.Message, "already exists") {
		t.Errorf("second create: %q", d.Message)
	}
	st, b = e.do("DELETE", "/v1/services/web", tok, "")
	d = e.wantError("DELETE", "/v1/services/web", http.StatusConflict, "conflict", b, st)
	if strings.Count(d.Message, "deleting service") != 1 || !strings.Contains(d.Message, "web-prod") {
		t.Errorf("deleting a service in use: %q", d.Message)
	}
}
