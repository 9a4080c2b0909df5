// Package modules runs the core modules of SPEC §9's second set that
// change host state (services, units, cron, keys, host name, time zone,
// waits, package repositories, mounts) for real, as root, through a real
// soul binary on one systemd lab host shared by every test of the package:
// check mode shows a diff and touches nothing, apply changes, a second
// apply changes nothing and leaves the files untouched.
package modules

import (
	"os"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/lab/labtest"
)

// labPackages are installable offline on the host: test/systemd's set
// plus python3 for the example's Python custom module, cron for users'
// crontabs (cron_user_test.go) and locales (locale_test.go).
var labPackages = []string{"cron", "hello", "locales", "python3", "redis-server", "redis-tools"}

// shared is the one lab host every test of the package uses (booted by
// the first test that needs it, closed by TestMain); lab.New removes an
// earlier lab of the same name.
var shared = &labtest.Shared{Pkg: "./test/modules", Config: lab.Config{Name: labName(), Hosts: 1, Packages: labPackages}}

// labName is "modules", or $SOULSTACK_LAB_NAME when set, so two checkouts
// can run this package at once on one machine (lab.New removes an earlier
// lab of the same name).
func labName() string {
	if n := os.Getenv("SOULSTACK_LAB_NAME"); n != "" {
		return n
	}
	return "modules"
}

func TestMain(m *testing.M) { labtest.Main(m, shared) }

// host returns the shared lab host, with the soul binary installed.
func host(t *testing.T) *lab.Host {
	t.Helper()
	return shared.Host(t, 0)
}

// sh runs a script as root on the host and fails the test on error.
func sh(t *testing.T, h *lab.Host, script string) string {
	t.Helper()
	return labtest.Sh(t, h, script)
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// taskResult is one task of `soul apply --local -o json`.
type taskResult = labtest.TaskResult

// applyRaw writes main.yml under dir on the host, runs it with the real
// soul as root and returns its JSON output whatever the exit status.
func applyRaw(t *testing.T, h *lab.Host, dir, main string, check bool) string {
	t.Helper()
	out, _ := labtest.ApplyRawSandboxed(t, h, dir, main, check)
	return string(out)
}

// apply writes a one-task destiny (YAML of the task list) under dir on the
// host and runs it with the real soul as root; it returns the task's
// result whatever the exit status.
func apply(t *testing.T, h *lab.Host, dir, tasks string, check bool) taskResult {
	t.Helper()
	out, stderr := labtest.ApplyRawSandboxed(t, h, dir, "input: {}\ntasks:\n"+tasks, check)
	res := labtest.Tasks(t, out, stderr)
	if len(res) == 0 {
		t.Fatalf("soul apply printed no task result: %q (stderr %q)", out, stderr)
	}
	return res[0]
}
