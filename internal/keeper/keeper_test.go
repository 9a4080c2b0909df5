package keeper_test

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/testutil"
)

var jwtRE = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$`)

// TestInitServeShutdown runs the real binary: `keeper init` prints a JWT
// alone on stdout, refuses a second time, and the token works against
// `keeper serve` over plain HTTP and pinned HTTPS on one port; SIGTERM
// stops it cleanly.
func TestInitServeShutdown(t *testing.T) {
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "keeper")

	cmd := exec.Command(keeperBin, "init", "--data-dir", dataDir, "--archon-name", "root")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("keeper init: %v\n%s", err, stderr.String())
	}
	if !jwtRE.MatchString(stdout.String()) {
		t.Fatalf("keeper init stdout is not a JWT alone:\n%q", stdout.String())
	}
	token := strings.TrimSpace(stdout.String())
	fp := regexp.MustCompile(`fingerprint[^:]*: ([0-9a-f]{64})`).FindStringSubmatch(stderr.String())
	if fp == nil {
		t.Fatalf("keeper init stderr does not show the CA fingerprint:\n%s", stderr.String())
	}

	again := exec.Command(keeperBin, "init", "--data-dir", dataDir)
	out, err := again.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "already initialized") {
		t.Fatalf("second keeper init: %v\n%s", err, out)
	}

	addr := testutil.FreeAddr(t)
	k := testutil.StartProcess(t, "keeper serve", keeperBin, "serve", "--data-dir", dataDir, "--listen", addr, "--log-format", "json")
	plain, err := apiclient.New("http://"+addr, token)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return plain.Ready(ctx) == nil }, "keeper ready")

	who, err := plain.Whoami(ctx)
	if err != nil || who.Name != "root" || who.Role != "admin" {
		t.Fatalf("whoami over http: %+v, %v", who, err)
	}
	secure, err := apiclient.New("https://"+addr, token, apiclient.WithFingerprint(fp[1]))
	if err != nil {
		t.Fatal(err)
	}
	if who, err := secure.Whoami(ctx); err != nil || who.Name != "root" {
		t.Fatalf("whoami over https: %+v, %v", who, err)
	}
	wrong, _ := apiclient.New("https://"+addr, token, apiclient.WithFingerprint(strings.Repeat("ab", 32)))
	if _, err := wrong.Whoami(ctx); err == nil {
		t.Fatal("a wrong pinned fingerprint was accepted")
	}
	anon, _ := apiclient.New("http://"+addr, "")
	if _, err := anon.ListSouls(ctx, apitypes.SoulQuery{}); domain.ErrorCode(err) != domain.CodeUnauthorized {
		t.Fatalf("anonymous list: %v", err)
	}
	// The soul stream is not served over plain HTTP.
	resp, err := http.Post("http://"+addr+"/soulstack.v1.SoulService/Connect", "application/grpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("soul stream over plain HTTP: %d", resp.StatusCode)
	}

	if err := k.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := k.Wait(15 * time.Second); err != nil {
		t.Fatalf("keeper exited with %v", err)
	}
	if !strings.Contains(k.Output(), "keeper stopped") {
		t.Fatalf("no clean stop in the logs:\n%s", k.Output())
	}
	if strings.Contains(k.Output(), token) {
		t.Fatal("the token appears in the keeper's logs")
	}
}
