package devmode_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/testutil"
)

// binDir holds keeper, soul and soulctl built for these tests.
var binDir string

// goEnv pins the go command's caches, so that commands run with another
// HOME (the README test) still build from the same module and build cache.
var goEnv []string

// repoRoot is the repository's root directory.
var repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))

func TestMain(m *testing.M) {
	dir, _, cleanup, err := testutil.BuildBinaries("github.com/soulstack/soulstack/cmd/keeper",
		"github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/cmd/soulctl")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	out, err := exec.Command("go", "env", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env:", err)
		cleanup()
		os.Exit(1)
	}
	for i, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		if v := strings.Split(strings.TrimSpace(string(out)), "\n"); i < len(v) {
			goEnv = append(goEnv, k+"="+v[i])
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}
