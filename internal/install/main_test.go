package install_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/testutil"
)

// bins are keeper, soul and soulctl built as `make dist` builds them
// (CGO_ENABLED=0, the version of scripts/version.sh) by TestMain;
// builtVersion and builtCommit are what scripts/version.sh said then.
var (
	bins                      map[string]string
	binDir                    string
	repoDir                   string
	builtVersion, builtCommit string
)

func TestMain(m *testing.M) {
	var cleanup func()
	var err error
	repoDir, _ = filepath.Abs(filepath.Join("..", ".."))
	for _, arg := range []struct {
		dst *string
		arg []string
	}{{&builtVersion, []string{"scripts/version.sh"}}, {&builtCommit, []string{"scripts/version.sh", "commit"}}} {
		cmd := exec.Command("sh", arg.arg...)
		cmd.Dir = repoDir
		out, err := cmd.Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "scripts/version.sh:", err)
			os.Exit(1)
		}
		*arg.dst = strings.TrimSpace(string(out))
	}
	binDir, bins, cleanup, err = testutil.BuildStaticBinaries(
		"github.com/soulstack/soulstack/cmd/keeper", "github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/cmd/soulctl",
		// mkpackage runs as its own process: compressing the packages inside
		// the race-instrumented test binary takes many minutes.
		"github.com/soulstack/soulstack/internal/install/mkpackage")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// run runs a command and returns its trimmed stdout, failing the test on
// an error.
func run(t *testing.T, dir string, name string, args ...string) string {
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
