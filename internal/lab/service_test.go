package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestRedisService installs Redis offline and drives it through its SysV
// init script, as the e2e tests' souls will.
func TestRedisService(t *testing.T) {
	requireRoot(t)
	l := newTestLab(t, "labtest-redis", FlavourSysV, 1, filepath.Join(t.TempDir(), "lab"))
	h := l.Hosts()[0]

	start := time.Now()
	mustExec(t, h, "apt-get update -q && apt-get install -y -q redis-server redis-tools")
	t.Logf("installing redis took %v", time.Since(start).Round(time.Millisecond))
	// Its postinst starts it, as on a sysvinit host.
	eventually(t, h, "redis-cli ping | grep -qx PONG", 10*time.Second)

	mustExec(t, h, "service redis-server stop")
	if _, _, err := h.Exec(t.Context(), "redis-cli ping"); err == nil {
		t.Error("redis answers after service redis-server stop")
	}
	mustExec(t, h, "service redis-server start")
	eventually(t, h, "redis-cli ping | grep -qx PONG", 10*time.Second)
	if got := mustExec(t, h, "redis-cli set k v >/dev/null && redis-cli get k"); got != "v" {
		t.Errorf("redis get k = %q", got)
	}

	// After a power cut the stale state in /run is gone and the service
	// starts again.
	if err := h.KillAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := h.Boot(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Exec(t.Context(), "redis-cli ping"); err == nil {
		t.Error("redis survived KillAll")
	}
	mustExec(t, h, "service redis-server start")
	eventually(t, h, "redis-cli ping | grep -qx PONG", 10*time.Second)
}

// crashEnv makes the test binary, run as a subprocess, build a lab in the
// directory it names and exit without closing it: a crashed test run.
const crashEnv = "SOULSTACK_LAB_CRASH_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		os.Exit(crashMain(dir))
	}
	os.Exit(m.Run())
}

// crashMain builds a lab (of systemd hosts: they leave cgroups behind too)
// with a running process and returns without closing it.
func crashMain(dir string) int {
	ctx := context.Background()
	l, err := New(ctx, Config{Name: "labtest-crash", Hosts: 2, Dir: dir, Packages: testPackages})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := l.Hosts()[0].Start(ctx, []string{"sleep", "1000"}, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func crash(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crashing helper: %v\n%s", err, out)
	}
	if mps, _ := mountsUnder(dir); len(mps) != 2 {
		t.Fatalf("after the crash: mounts %v, want the 2 host roots left behind", mps)
	}
	if !linkExists(namesFor("labtest-crash").bridge()) {
		t.Fatal("after the crash: no bridge left behind")
	}
	if cg := labCgroup(namesFor("labtest-crash")); cg == "" || len(cgroupPIDs(cg)) == 0 {
		t.Fatalf("after the crash: no process left in the lab's cgroup %q", cg)
	}
}

func TestCrashCleanup(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "lab")
	n := namesFor("labtest-crash")

	crash(t, dir)
	if err := Cleanup(t.Context(), "labtest-crash"); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	assertGone(t, n, dir)

	// New removes the leftovers itself.
	crash(t, dir)
	l := newTestLab(t, "labtest-crash", FlavourSystemd, 2, dir)
	mustExec(t, l.Hosts()[0], "ping -c1 -W2 "+l.Hosts()[1].IP())
	if got := mustExec(t, l.Hosts()[0], "pgrep -x sleep | wc -l"); got != "0" {
		t.Errorf("%s sleep processes in a fresh host, want none: the crashed lab's survived", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, n, dir)

	// Cleanup refuses a lab that a live process holds.
	l = newTestLab(t, "labtest-crash", FlavourSystemd, 1, dir)
	if err := Cleanup(t.Context(), "labtest-crash"); err == nil {
		t.Error("Cleanup removed a live lab")
	}
	mustExec(t, l.Hosts()[0], "true")
}
