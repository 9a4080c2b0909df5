package devmode_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binDir holds keeper, soul and soulctl built for these tests.
var binDir string

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
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
