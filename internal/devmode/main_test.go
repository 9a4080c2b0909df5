package devmode_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binDir holds keeper, soul and soulctl built for these tests.
var binDir string

// goEnv pins the go command's caches, so that commands run with another
// HOME (the README test) still build from the same module and build cache.
var goEnv []string

// repoRoot is the repository's root directory.
var repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "devmode-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/keeper", "./cmd/soul", "./cmd/soulctl")
	cmd.Dir = repoRoot
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	out, err := exec.Command("go", "env", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env:", err)
		os.Exit(1)
	}
	for i, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		if v := strings.Split(strings.TrimSpace(string(out)), "\n"); i < len(v) {
			goEnv = append(goEnv, k+"="+v[i])
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
