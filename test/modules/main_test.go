// Package modules runs the core modules of SPEC §9's second set that
// change host state (services, units, cron, keys, host name, time zone,
// waits, package repositories, mounts) for real, as root, through a real
// soul binary on one systemd lab host shared by every test of the package:
// check mode shows a diff and touches nothing, apply changes, a second
// apply changes nothing and leaves the files untouched.
package modules

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

// labName is this package's lab; lab.New removes an earlier one of the
// same name.
const labName = "modules"

var soulBin string

// labPackages are installable offline on the host; the same set as
// test/systemd's, so both share one cached repository.
var labPackages = []string{"hello", "redis-server", "redis-tools"}

// shared is the one lab host every test of the package uses (booted by
// the first test that needs it, closed by TestMain).
var shared struct {
	once sync.Once
	lab  *lab.Lab
	err  error
}

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	_, bins, cleanup, err := testutil.BuildStaticBinaries("github.com/soulstack/soulstack/cmd/soul")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	soulBin = bins["soul"]
	code := m.Run()
	if shared.lab != nil {
		if err := shared.lab.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the lab:", err)
			code = max(code, 1)
		}
	}
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
		t.Fatal("module lab tests need root (a lab host in namespaces); CI must run them as root")
	}
	t.Skip("skipping: module lab tests need root (a lab host); run: sudo go test ./test/modules")
}

// host returns the shared lab host, with the soul binary installed.
func host(t *testing.T) *lab.Host {
	t.Helper()
	requireRoot(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		start := time.Now()
		l, err := lab.New(ctx, lab.Config{Name: labName, Hosts: 1, Packages: labPackages})
		if err != nil {
			shared.err = fmt.Errorf("building the lab: %w", err)
			return
		}
		shared.lab = l
		if err := l.Hosts()[0].CopyIn(soulBin, "/usr/local/bin/soul"); err != nil {
			shared.err = err
			return
		}
		fmt.Fprintf(os.Stderr, "modules: lab host up in %s\n", time.Since(start).Round(time.Millisecond))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.lab.Hosts()[0]
}

// sh runs a script as root on the host and fails the test on error.
func sh(t *testing.T, h *lab.Host, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _, err := h.Exec(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// taskResult is one line of `soul apply --local -o json`.
type taskResult struct {
	Name    string `json:"name"`
	Module  string `json:"module"`
	Changed bool   `json:"changed"`
	Failed  bool   `json:"failed"`
	Msg     string `json:"msg"`
	Diff    string `json:"diff"`
	Stderr  string `json:"stderr"`
}

// applyRaw writes main.yml under dir on the host, runs it with the real
// soul as root and returns its JSON output whatever the exit status.
func applyRaw(t *testing.T, h *lab.Host, dir, main string, check bool) string {
	t.Helper()
	if err := h.WriteFile(path.Join(dir, "main.yml"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"soul", "apply", "--local", dir, "--sid", "lab", "-o", "json"}
	if check {
		argv = append(argv, "--check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, err := h.Command(ctx, argv...)
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("soul apply: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// apply writes a one-task destiny (YAML of the task list) under dir on the
// host and runs it with the real soul as root; it returns the task's
// result whatever the exit status.
func apply(t *testing.T, h *lab.Host, dir, tasks string, check bool) taskResult {
	t.Helper()
	out := applyRaw(t, h, dir, "input: {}\ntasks:\n"+tasks, check)
	var res struct {
		Tasks []taskResult `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Tasks) == 0 {
		t.Fatalf("soul apply output %q: %v", out, err)
	}
	return res.Tasks[0]
}
