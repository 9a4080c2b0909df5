package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
)

// An invalid duration in a request body names its field.
func TestInvalidDurationNamesTheField(t *testing.T) {
	e := newEnv(t)
	for body, want := range map[string]string{
		`{"ttl":"5"}`:  `request field "ttl" must be a duration such as "90m", "24h" or "30d", or a number of seconds, not a string "5"`,
		`{"ttl":true}`: `request field "ttl" must be a duration`,
	} {
		st, b := e.do("POST", "/v1/join-tokens", e.tokens[auth.RoleAdmin], body)
		ed := e.wantError("POST", "/v1/join-tokens", http.StatusBadRequest, "invalid", b, st)
		if !strings.Contains(ed.Message, want) {
			t.Errorf("%s: message %q, want it to contain %q", body, ed.Message, want)
		}
	}
	if st, b := e.do("POST", "/v1/join-tokens", e.tokens[auth.RoleAdmin], `{"ttl":60}`); st != http.StatusCreated {
		t.Fatalf("ttl in seconds: %d %s", st, b)
	}
}
