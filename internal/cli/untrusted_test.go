package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/cli"
)

// TestUntrustedKeeperCertificate: a keeper that answers with a
// certificate soulctl does not trust is reported as such, with how to
// trust it — not as unreachable ("is it running?").
func TestUntrustedKeeperCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	for _, extra := range [][]string{nil, {"--fingerprint", strings.Repeat("ab", 32)}} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--keeper", srv.URL, "--token", "t", "--config", t.TempDir() + "/none.yaml", "souls", "list"}, extra...)
		code := cli.Main(context.Background(), args, &stdout, &stderr)
		msg := stderr.String()
		if code != 1 || !strings.Contains(msg, "TLS certificate is not trusted") || !strings.Contains(msg, "--fingerprint") || strings.Contains(msg, "is it running") {
			t.Errorf("soulctl %v: exit %d\n%s", extra, code, msg)
		}
	}
}
