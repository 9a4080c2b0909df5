package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/testutil"
)

// Binaries built by TestMain: the tests run the real programs. soulDeb is
// the soulstack-soul .deb that systemd hosts install.
var keeperBin, soulBin, soulctlBin, soulDeb string

// TestMain builds keeper, soul and soulctl once. Without root nothing is
// built: every test skips (or fails in CI) in requireRoot.
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	// Static binaries: the soul runs inside the lab's Debian root.
	binDir, bins, cleanup, err := testutil.BuildStaticBinaries("github.com/soulstack/soulstack/cmd/keeper",
		"github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/cmd/soulctl",
		"github.com/soulstack/soulstack/internal/install/mkpackage")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keeperBin, soulBin, soulctlBin = bins["keeper"], bins["soul"], bins["soulctl"]
	if soulDeb, err = buildSoulDeb(binDir, bins["mkpackage"]); err != nil {
		cleanup()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// requireRoot skips a test that needs root, except in CI (CI=true), where
// every test must run, so a non-root run fails.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("e2e tests need root (a lab of hosts in network namespaces with overlay mounts); CI must run them as root")
	}
	t.Skip("skipping: e2e tests need root (a lab of hosts in network namespaces with overlay mounts); run: sudo go test ./test/e2e")
}

// buildSoulDeb builds the soulstack-soul .deb (this tree's version, the
// machine's architecture) from the static soul in binDir, as make package
// does, into binDir/dist, and returns its path.
func buildSoulDeb(binDir, mkpackage string) (string, error) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	ver, err := exec.Command("sh", filepath.Join(repo, "scripts", "version.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("scripts/version.sh: %w", err)
	}
	dist := filepath.Join(binDir, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return "", err
	}
	// make dist's layout: <dist>/linux-<arch>/soul.
	if err := os.Symlink(binDir, filepath.Join(dist, "linux-"+runtime.GOARCH)); err != nil {
		return "", err
	}
	cmd := exec.Command(mkpackage, "-version", strings.TrimSpace(string(ver)), "-dist", dist, "-arch", runtime.GOARCH,
		"-license", filepath.Join(repo, "LICENSE"), "-format", "deb", "-packages", "soulstack-soul")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("mkpackage: %w\n%s", err, stderr)
	}
	paths := strings.Fields(string(out))
	if len(paths) != 1 || !strings.HasSuffix(paths[0], ".deb") {
		return "", fmt.Errorf("mkpackage built %v, want one .deb", paths)
	}
	return paths[0], nil
}
