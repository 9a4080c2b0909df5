// Package systemd tests the soul's systemd paths on a real systemd host of
// the lab (systemd 252 as PID 1): core.service.* against Redis's own unit
// and against units written by a task, and core.service.enabled across a
// reboot. Modules run through the real soul (`soul apply --local`).
//
// The tests need root; without it they skip, except in CI (CI=true).
package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/lab/labtest"
	"github.com/soulstack/soulstack/internal/testutil"
)

// labName is fixed, so a crashed run's leftovers are removed by the next.
const labName = "systemd-svc"

var soulBin string

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
	cleanup()
	os.Exit(code)
}

// requireRoot skips without root, except in CI where it fails.
func requireRoot(t *testing.T) {
	t.Helper()
	labtest.RequireRoot(t, "./test/systemd")
}

// newHost builds a one-host systemd lab, closed when the test ends, with
// the soul binary and Redis installed (Redis from the lab's repository,
// started and enabled by its package, as on a real host).
func newHost(t *testing.T) *lab.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cfg := lab.Config{Name: labName, Hosts: 1, Flavour: lab.FlavourSystemd, Packages: []string{"hello", "redis-server", "redis-tools"}}
	l, err := lab.New(ctx, cfg)
	// Another `go test` of this package on the machine may hold the name.
	for errors.Is(err, lab.ErrLocked) && ctx.Err() == nil {
		time.Sleep(time.Second)
		l, err = lab.New(ctx, cfg)
	}
	if err != nil {
		t.Fatalf("building the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	h := l.Hosts()[0]
	if err := h.CopyIn(soulBin, "/usr/local/bin/soul"); err != nil {
		t.Fatal(err)
	}
	sh(t, h, "apt-get update -q && apt-get install -y -q redis-server redis-tools")
	t.Logf("systemd host up with Redis in %v", time.Since(start).Round(time.Millisecond))
	return h
}

// sh runs a script on the host and fails the test on error.
func sh(t *testing.T, h *lab.Host, script string) string {
	t.Helper()
	return strings.TrimSpace(labtest.Sh(t, h, script))
}

// taskResult is a task of `soul apply --local -o json`.
type taskResult = labtest.TaskResult

// apply runs tasks (YAML of a task list) as a destiny with the real soul,
// as root on the host, and returns the results of the tasks that ran, and
// soul apply's standard error (validation errors go there).
func apply(t *testing.T, h *lab.Host, tasks string, check bool) ([]taskResult, string) {
	t.Helper()
	dir := "/root/destiny-" + strings.ReplaceAll(t.Name(), "/", "-")
	out, stderr := labtest.ApplyRaw(t, h, dir, "input: {}\ntasks:\n"+tasks, check)
	return labtest.Tasks(t, out, stderr), stderr
}

// one runs a single task and returns its result.
func one(t *testing.T, h *lab.Host, task string, check bool) taskResult {
	t.Helper()
	res, stderr := apply(t, h, task, check)
	if len(res) != 1 {
		t.Fatalf("%d task results, want 1 (stderr %q)", len(res), stderr)
	}
	return res[0]
}

// svc is a one-task destiny calling core.service.<op> on name.
func svc(op, name string) string {
	return fmt.Sprintf("  - name: %s %s\n    module: core.service.%s\n    params: {name: %q}\n", op, name, op, name)
}
