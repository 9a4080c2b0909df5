package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
)

// A request body over the API's 4 MiB limit is a 413 that says so, not a
// 400 for a malformed request.
func TestBodyTooLarge(t *testing.T) {
	e := newEnv(t)
	big := `{"covens":["` + strings.Repeat("x", 5<<20) + `"]}`
	for _, path := range []string{"/v1/join-tokens", "/v1/souls/h1/accept"} {
		st, b := e.do("POST", path, e.tokens[auth.RoleAdmin], big)
		ed := e.wantError("POST", path, http.StatusRequestEntityTooLarge, "too_large", b, st)
		if !strings.Contains(ed.Message, "4 MiB") {
			t.Fatalf("POST %s: message %q does not name the limit", path, ed.Message)
		}
	}
}
