// Package install proves on systemd lab hosts (systemd as PID 1, Debian's
// dpkg and apt) that the soul installs the ways the README shows: the
// soulstack-soul .deb (dpkg -i, then systemctl start with a config; apt-get
// remove and purge) and the Keeper's install.sh piped into sh. The Keeper
// runs on the machine side of the lab, on the bridge address.
//
// The tests need root; without it they skip, except in CI (CI=true).
package install

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

// bins are the static soul and mkpackage (which builds the .deb in its own
// process: compressing inside the race-instrumented test binary is slow).
var (
	bins    map[string]string
	binDir  string
	repoDir string
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	var cleanup func()
	var err error
	binDir, bins, cleanup, err = testutil.BuildStaticBinaries(
		"github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/cmd/soulctl", "github.com/soulstack/soulstack/cmd/keeper",
		"github.com/soulstack/soulstack/internal/install/mkpackage")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repoDir, _ = filepath.Abs(filepath.Join("..", ".."))
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// requireRoot skips without root, except in CI where it fails.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("install tests need root (systemd lab hosts in namespaces); CI must run them as root")
	}
	t.Skip("skipping: install tests need root (systemd lab hosts); run: sudo go test ./test/install")
}

// buildDeb builds the .deb of package pkg (soulstack-soul or
// soulstack-keeper) of this tree's version for the machine's architecture
// and returns its path.
func buildDeb(t *testing.T, pkg string) string {
	t.Helper()
	out := t.TempDir()
	ver := run(t, repoDir, "sh", "scripts/version.sh")
	// make dist's layout: <dist>/linux-<arch>/soul.
	if err := os.Symlink(binDir, filepath.Join(out, "linux-"+runtime.GOARCH)); err != nil {
		t.Fatal(err)
	}
	paths := strings.Fields(run(t, repoDir, bins["mkpackage"], "-version", ver, "-dist", out, "-arch", runtime.GOARCH,
		"-license", filepath.Join(repoDir, "LICENSE"), "-format", "deb", "-packages", pkg))
	if len(paths) != 1 || !strings.HasSuffix(paths[0], ".deb") {
		t.Fatalf("mkpackage built %v, want one .deb", paths)
	}
	return paths[0]
}

// run runs a command on the machine and returns its trimmed stdout.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}
