package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestWarnPlainHTTP: audit L6 — soulctl warns on stderr when it sends a
// token over plain HTTP to a host other than loopback, and only then.
func TestWarnPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		url, token string
		warn       bool
	}{
		{"http://keeper.example.com:8080", "tok", true},
		{"http://10.1.2.3:8080", "tok", true},
		{"http://[2001:db8::1]:8080", "tok", true},
		{"http://127.0.0.1:8080", "tok", false},
		{"http://127.0.0.53:8080", "tok", false},
		{"http://[::1]:8080", "tok", false},
		{"http://localhost:8080", "tok", false},
		{"https://keeper.example.com:8080", "tok", false},
		{"http://keeper.example.com:8080", "", false},
	} {
		var b bytes.Buffer
		warnPlainHTTP(&b, tc.url, tc.token)
		if got := strings.Contains(b.String(), "warning: sending your token in clear"); got != tc.warn {
			t.Errorf("%s (token %q): warned %v, want %v: %q", tc.url, tc.token, got, tc.warn, b.String())
		}
	}
}
