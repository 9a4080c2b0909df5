// Package ansible is the end-to-end proof of "bring your Ansible": every
// public role pinned in internal/ansibleimport/testdata/roles is imported
// unchanged with the library, validated as `soulctl scenario validate`
// does, registered on a real Keeper and created as an incarnation on its
// own systemd lab host, where the soul runs as the soulstack-soul unit of
// the .deb. The first create must converge and the second change nothing;
// then real ansible-core, installed inside the same host, runs the
// upstream role with its defaults in check mode and must find nothing to
// change: every file, line, package and service is already what Ansible
// would make it.
package ansible

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/lab/labtest"
	"github.com/soulstack/soulstack/internal/testutil"
)

// pkgPath names this package in skip and failure messages.
const pkgPath = "./test/ansible"

// Binaries built by TestMain: keeper runs on the machine side of the lab,
// soulDeb is the soulstack-soul package every host installs.
var keeperBin, soulDeb string

// TestMain builds the keeper and the soul's .deb once. Without root nothing
// is built: the tests skip, or fail in CI (labtest.RequireRoot).
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	// Static binaries: the soul runs inside the lab's Debian root.
	binDir, bins, cleanup, err := testutil.BuildStaticBinaries("github.com/soulstack/soulstack/cmd/keeper",
		"github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/internal/install/mkpackage")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keeperBin = bins["keeper"]
	if soulDeb, err = buildSoulDeb(binDir, bins["mkpackage"]); err != nil {
		cleanup()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// labName is "ansible", or $SOULSTACK_LAB_NAME when set, so two checkouts
// can run this package at once on one machine (lab.New removes an earlier
// lab of the same name).
func labName() string {
	if n := os.Getenv("SOULSTACK_LAB_NAME"); n != "" {
		return n
	}
	return "ansible"
}

// requireRoot skips t without root, except in CI, where it fails.
func requireRoot(t *testing.T) { t.Helper(); labtest.RequireRoot(t, pkgPath) }

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
