package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/soulstack/soulstack/internal/testutil"
)

// Binaries built by TestMain: the tests run the real programs.
var keeperBin, soulBin, soulctlBin string

// TestMain builds keeper, soul and soulctl once. Without root nothing is
// built: every test skips (or fails in CI) in requireRoot.
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	// Static binaries: the soul runs inside the lab's Debian root.
	_, bins, cleanup, err := testutil.BuildStaticBinaries("github.com/soulstack/soulstack/cmd/keeper",
		"github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/cmd/soulctl")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keeperBin, soulBin, soulctlBin = bins["keeper"], bins["soul"], bins["soulctl"]
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
