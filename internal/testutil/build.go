package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// BuildBinaries builds the main packages pkgs (import paths, or paths
// relative to the test's package directory) into a new temporary
// directory, for TestMain, so the tests run the real programs. paths maps
// each binary's name, the last element of its package path, to its file;
// cleanup removes the directory. On error nothing is left behind. The go
// command's output goes to stderr.
func BuildBinaries(pkgs ...string) (dir string, paths map[string]string, cleanup func(), err error) {
	return build(nil, nil, pkgs)
}

// BuildStaticBinaries is BuildBinaries with cgo disabled: the binaries run
// in another root file system (the lab's hosts) as well. They are built
// with -trimpath as `make dist` builds them, so a test running make dist
// finds the packages compiled in the build cache.
func BuildStaticBinaries(pkgs ...string) (dir string, paths map[string]string, cleanup func(), err error) {
	return build([]string{"CGO_ENABLED=0"}, []string{"-trimpath"}, pkgs)
}

// versionLdflags is the -X flags of scripts/version.sh, so test binaries
// carry the version `make build` would give them; "" when the script
// cannot run (the binaries then fall back to the VCS stamp of go build).
func versionLdflags() string {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return ""
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "version.sh"), "ldflags").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func build(env, flags, pkgs []string) (string, map[string]string, func(), error) {
	dir, err := os.MkdirTemp("", "soulstack-test-bin-")
	if err != nil {
		return "", nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, flags...)
	if ld := versionLdflags(); ld != "" {
		args = append(args, "-ldflags", ld)
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, nil, fmt.Errorf("building %v: %w", pkgs, err)
	}
	paths := map[string]string{}
	for _, pkg := range pkgs {
		name := path.Base(filepath.ToSlash(pkg))
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			cleanup()
			return "", nil, nil, fmt.Errorf("building %s: no binary %s: is it a main package?", pkg, name)
		}
		paths[name] = p
	}
	return dir, paths, cleanup, nil
}
