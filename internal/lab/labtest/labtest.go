// Package labtest holds what the test packages that run the product on lab
// hosts share: the root requirement, one lab booted by the first test that
// needs it, shell commands on a host, and the real soul applying a destiny
// there as root.
package labtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/testutil"
)

// RequireRoot skips t without root, except in CI, where it fails: lab
// hosts live in namespaces only root can make. pkg names the package in the
// messages (e.g. "./test/modules").
func RequireRoot(t testing.TB, pkg string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s needs root (lab hosts in namespaces); CI must run it as root", pkg)
	}
	t.Skipf("skipping: %s needs root (lab hosts); run: sudo go test %s", pkg, pkg)
}

// Shared is a lab booted by the first test that asks for a host and kept
// for every later test of the package; TestMain calls Close.
type Shared struct {
	// Pkg names the package in messages.
	Pkg string
	// Config is the lab to build.
	Config lab.Config
	// Soul, when set, is copied into every host as /usr/local/bin/soul.
	Soul string

	once sync.Once
	lab  *lab.Lab
	err  error
}

// Host returns host i (0-based) of the shared lab, booting it first.
func (s *Shared) Host(t testing.TB, i int) *lab.Host {
	t.Helper()
	RequireRoot(t, s.Pkg)
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		start := time.Now()
		l, err := lab.New(ctx, s.Config)
		if err != nil {
			s.err = fmt.Errorf("building the lab: %w", err)
			return
		}
		s.lab = l
		if s.Soul != "" {
			for _, h := range l.Hosts() {
				if err := h.CopyIn(s.Soul, "/usr/local/bin/soul"); err != nil {
					s.err = err
					return
				}
			}
		}
		fmt.Fprintf(os.Stderr, "%s: lab up in %s\n", s.Pkg, time.Since(start).Round(time.Millisecond))
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.lab.Hosts()[i]
}

// Close tears the lab down, if one was booted.
func (s *Shared) Close() error {
	if s.lab == nil {
		return nil
	}
	return s.lab.Close()
}

// Sh runs a script as root on h and fails the test on error; it returns
// the script's standard output as it is.
func Sh(t testing.TB, h *lab.Host, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _, err := h.Exec(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TaskResult is one task of `soul apply --local -o json`.
type TaskResult struct {
	Name    string `json:"name"`
	Module  string `json:"module"`
	Changed bool   `json:"changed"`
	Failed  bool   `json:"failed"`
	Msg     string `json:"msg"`
	Diff    string `json:"diff"`
	Stderr  string `json:"stderr"`
}

// ApplyRaw writes main (a destiny's main.yml) under dir on h and runs it
// with the real soul as root; it returns soul apply's standard output and
// error whatever its exit status, failing the test only when the soul could
// not run at all.
func ApplyRaw(t testing.TB, h *lab.Host, dir, main string, check bool) (stdout []byte, stderr string) {
	t.Helper()
	return applyRaw(t, h, dir, main, check, false)
}

// ApplyRawSandboxed is ApplyRaw with the soul run under the sandboxing
// options of the packaged unit (SoulSandbox), as the installed soul runs
// its modules; the host must boot systemd.
func ApplyRawSandboxed(t testing.TB, h *lab.Host, dir, main string, check bool) (stdout []byte, stderr string) {
	t.Helper()
	return applyRaw(t, h, dir, main, check, true)
}

func applyRaw(t testing.TB, h *lab.Host, dir, main string, check, sandboxed bool) (stdout []byte, stderr string) {
	t.Helper()
	if err := h.WriteFile(path.Join(dir, "main.yml"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"soul", "apply", "--local", dir, "--sid", "lab", "-o", "json"}
	if check {
		argv = append(argv, "--check")
	}
	if sandboxed {
		var err error
		if argv, err = SoulSandbox(argv...); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, err := h.Command(ctx, argv...)
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("soul apply: %v\n%s", err, errb.String())
	}
	return out, errb.String()
}

// Tasks decodes the task results of ApplyRaw's output (none when the soul
// printed nothing, e.g. a validation error on stderr).
func Tasks(t testing.TB, stdout []byte, stderr string) []TaskResult {
	t.Helper()
	var res struct {
		Tasks []TaskResult `json:"tasks"`
	}
	if len(stdout) > 0 {
		if err := json.Unmarshal(stdout, &res); err != nil {
			t.Fatalf("soul apply output %q (stderr %q): %v", stdout, stderr, err)
		}
	}
	return res.Tasks
}

// Lab is the shared lab once a test booted it (nil before).
func (s *Shared) Lab() *lab.Lab { return s.lab }

// Main is a TestMain for a package whose tests share s: as root it builds
// the static soul binary into s.Soul, runs the tests and closes the lab;
// without root it only runs them (they skip, or fail in CI).
func Main(m *testing.M, s *Shared) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	_, bins, cleanup, err := testutil.BuildStaticBinaries("github.com/soulstack/soulstack/cmd/soul")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.Soul = bins["soul"]
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the lab:", err)
		code = max(code, 1)
	}
	cleanup()
	os.Exit(code)
}
