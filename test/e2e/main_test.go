package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binaries built by TestMain: the tests run the real programs.
var keeperBin, soulBin, soulctlBin string

// TestMain builds keeper, soul and soulctl once. Without root nothing is
// built: every test skips (or fails in CI) in requireRoot.
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "soulstack-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keeperBin, soulBin, soulctlBin = filepath.Join(dir, "keeper"), filepath.Join(dir, "soul"), filepath.Join(dir, "soulctl")
	for bin, pkg := range map[string]string{keeperBin: "cmd/keeper", soulBin: "cmd/soul", soulctlBin: "cmd/soulctl"} {
		// Static binaries: the soul runs inside the lab's Debian root.
		build := exec.Command("go", "build", "-o", bin, "github.com/soulstack/soulstack/"+pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
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
