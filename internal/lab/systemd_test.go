package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdLab boots a lab of systemd hosts once and drives its hosts
// through what the e2e tests rely on: systemd as PID 1, booted and idle;
// Redis's own unit; a clean stop, a power cut, a reboot by the lab and one
// asked from inside the host, each followed by a boot with a new boot id
// where enabled units come back by themselves.
func TestSystemdLab(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "lab")
	l := newTestLab(t, "labtest-sd", FlavourSystemd, 2, dir)
	h1, h2 := l.Hosts()[0], l.Hosts()[1]

	// lastLine is the last line the previous boot logged about redis-server.
	const lastLine = "journalctl -b -1 -u redis-server --no-pager -q | tail -1"
	bootID := func(h *Host) string {
		t.Helper()
		id := mustExec(t, h, "cat /proc/sys/kernel/random/boot_id")
		if outside, err := h.BootID(); err != nil || outside != id {
			t.Errorf("%s: boot id %q inside, %q (%v) from BootID", h.Name(), id, outside, err)
		}
		return id
	}

	t.Run("booted", func(t *testing.T) {
		for _, h := range l.Hosts() {
			if got := mustExec(t, h, "tr '\\0' ' ' </proc/1/cmdline"); !strings.HasPrefix(got, "/lib/systemd/systemd") {
				t.Errorf("%s PID 1 = %q, want systemd", h.Name(), got)
			}
			if got := mustExec(t, h, "systemctl is-system-running || true"); got != "running" {
				t.Errorf("%s: is-system-running = %q, want running; failed units: %s", h.Name(), got,
					mustExec(t, h, "systemctl --failed --no-legend --plain"))
			}
			if got := mustExec(t, h, "systemctl get-default"); got != "multi-user.target" {
				t.Errorf("%s: default target %q", h.Name(), got)
			}
			for _, u := range []string{"apt-daily.timer", "getty.target", "console-getty.service"} {
				if got := mustExec(t, h, "systemctl is-enabled "+u+" || true"); got != "masked" {
					t.Errorf("%s: %s is %q, want masked", h.Name(), u, got)
				}
			}
			if _, _, err := h.Exec(t.Context(), "test -e /usr/sbin/policy-rc.d || test -e /usr/sbin/runlevel && ! test -L /usr/sbin/runlevel"); err == nil {
				t.Errorf("%s has the sysv flavour's policy-rc.d or runlevel stub", h.Name())
			}
			if got := mustExec(t, h, "hostname; cat /etc/machine-id | wc -c"); got != h.Name()+"\n33" {
				t.Errorf("%s: hostname and machine-id length: %q", h.Name(), got)
			}
		}
		if bootID(h1) == bootID(h2) {
			t.Error("both hosts have the same boot id")
		}
	})

	t.Run("redis unit", func(t *testing.T) {
		mustExec(t, h1, "apt-get update -q && apt-get install -y -q redis-server redis-tools")
		eventually(t, h1, "redis-cli ping | grep -qx PONG", 10*time.Second)
		if got := mustExec(t, h1, "systemctl is-active redis-server; systemctl is-enabled redis-server"); got != "active\nenabled" {
			t.Errorf("after install: %q, want active and enabled", got)
		}
		pid := mustExec(t, h1, "systemctl show -p MainPID --value redis-server")
		mustExec(t, h1, "systemctl restart redis-server")
		if got := mustExec(t, h1, "systemctl show -p MainPID --value redis-server"); got == pid || got == "0" {
			t.Errorf("MainPID %s before the restart, %s after", pid, got)
		}
		if got := mustExec(t, h1, "journalctl -u redis-server --no-pager -q | grep -c Started"); got == "0" || got == "1" {
			t.Errorf("the journal shows %s starts of redis-server, want 2", got)
		}
	})

	t.Run("clean stop and boot", func(t *testing.T) {
		p, err := h1.Start(t.Context(), []string{"sleep", "1000"}, "")
		if err != nil {
			t.Fatal(err)
		}
		// Stopped, as systemd-shutdown's kill(-1, SIGSTOP) leaves it when
		// the lab cuts the power before the SIGCONT that follows: its
		// nsenter parent stops too, and the shutdown must not wait for
		// it forever (the namespace's init cannot exit before its last
		// member is reaped).
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		before := bootID(h1)
		start := time.Now()
		if err := h1.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("clean stop took %v", time.Since(start).Round(time.Millisecond))
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a process entered from outside survived the shutdown")
		}
		if _, _, err := h1.Exec(t.Context(), "true"); !errors.Is(err, ErrHostDown) {
			t.Fatalf("Exec on a stopped host: %v, want ErrHostDown", err)
		}
		// The stop was clean: journald wrote its shutdown, redis its
		// "ready to exit" (it saves on SIGTERM).
		start = time.Now()
		if err := h1.Boot(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("boot took %v", time.Since(start).Round(time.Millisecond))
		if bootID(h1) == before {
			t.Error("the boot id did not change")
		}
		eventually(t, h1, "redis-cli ping | grep -qx PONG", 10*time.Second)
		if got := mustExec(t, h1, lastLine); !strings.Contains(got, "Stopped redis-server") {
			t.Errorf("redis-server was not stopped cleanly: the last boot's journal ends with %q", got)
		}
	})

	t.Run("power cut", func(t *testing.T) {
		before := bootID(h1)
		if err := h1.KillAll(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(cgroupPIDs(h1.cgroup)); n != 0 {
			t.Errorf("%d processes left in the host's cgroup after a power cut", n)
		}
		if err := h1.Boot(t.Context()); err != nil {
			t.Fatal(err)
		}
		if bootID(h1) == before {
			t.Error("the boot id did not change")
		}
		eventually(t, h1, "redis-cli ping | grep -qx PONG", 10*time.Second)
		if got := mustExec(t, h1, lastLine); strings.Contains(got, "Stopped redis-server") {
			t.Errorf("a power cut stopped redis-server cleanly: the last boot's journal ends with %q", got)
		}
	})

	t.Run("reboot by the lab", func(t *testing.T) {
		before := bootID(h1)
		mustExec(t, h1, "systemctl disable --now redis-server")
		if err := h1.Reboot(t.Context()); err != nil {
			t.Fatal(err)
		}
		if bootID(h1) == before {
			t.Error("the boot id did not change")
		}
		if got := mustExec(t, h1, "systemctl is-active redis-server || true"); got != "inactive" {
			t.Errorf("a disabled redis-server is %q after a reboot", got)
		}
		mustExec(t, h1, "systemctl enable redis-server")
	})

	t.Run("reboot asked inside", func(t *testing.T) {
		before, boots := bootID(h1), h1.Boots()
		// systemctl returns once the reboot job is queued.
		mustExec(t, h1, "systemctl reboot")
		start := time.Now()
		if err := h1.WaitBoot(t.Context(), boots); err != nil {
			t.Fatal(err)
		}
		t.Logf("reboot took %v", time.Since(start).Round(time.Millisecond))
		if bootID(h1) == before {
			t.Error("the boot id did not change")
		}
		eventually(t, h1, "redis-cli ping | grep -qx PONG", 10*time.Second)
		mustExec(t, h1, "ping -c1 -W2 "+h2.IP())
	})

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, l.names, dir)
	if _, err := os.Stat(h1.cgroup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host cgroup %s left: %v", h1.cgroup, err)
	}
}
