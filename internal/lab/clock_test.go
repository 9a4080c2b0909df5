package lab

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// capSysTime is CAP_SYS_TIME's bit in a capability set (linux/capability.h).
const capSysTime = 25

// realtimeOffset is CLOCK_REALTIME minus CLOCK_BOOTTIME: it moves only when
// someone sets the machine's clock (or the kernel warps it for a time zone),
// never with the passing of time.
func realtimeOffset(t *testing.T) int64 {
	t.Helper()
	var rt, bt unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &rt); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &bt); err != nil {
		t.Fatal(err)
	}
	return rt.Nano() - bt.Nano()
}

// TestHostCannotSetMachineClock proves a lab host cannot move the machine's
// clock: the clock is not namespaced, so a host holding CAP_SYS_TIME (its
// PID 1, a unit, a command entered from outside) could set it, or warp it
// by a time zone offset through timedatectl set-timezone, under every
// other process of the machine. The attempts set no-op values (the current
// time, a zero-offset zone), so even a run where they are not refused
// does not shift the machine's time.
func TestHostCannotSetMachineClock(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "lab")
	l := newTestLab(t, "labtest-clock", FlavourSystemd, 1, dir)
	h := l.Hosts()[0]
	before := realtimeOffset(t)

	// Every process in the host lacks the capability in its bounding set:
	// PID 1, a unit systemd starts, and a command entered from outside.
	for what, script := range map[string]string{
		"PID 1":   "grep CapBnd /proc/1/status",
		"a unit":  "systemd-run --pipe --wait -q grep CapBnd /proc/self/status",
		"entered": "grep CapBnd /proc/self/status",
	} {
		out := mustExec(t, h, script)
		f := strings.Fields(out)
		bnd, err := strconv.ParseUint(f[len(f)-1], 16, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", what, out, err)
		}
		if bnd&(1<<capSysTime) != 0 {
			t.Errorf("%s holds CAP_SYS_TIME (CapBnd %s)", what, f[len(f)-1])
		}
	}

	// Setting the clock to the time it already has is refused.
	out, stderr, err := h.Exec(t.Context(), `date -s "@$(date +%s.%N)"`)
	if err == nil {
		t.Errorf("date -s inside the host succeeded (%q): the host can set the machine's clock", out)
	} else if !strings.Contains(stderr, "not permitted") {
		t.Errorf("date -s failed, but not for want of the capability: %v", err)
	}

	// timedatectl set-timezone changes the host's /etc/localtime only.
	machineZone, _ := filepath.EvalSymlinks("/etc/localtime")
	zone := "Etc/UTC"
	if strings.HasSuffix(mustExec(t, h, "readlink /etc/localtime || true"), "zoneinfo/Etc/UTC") {
		zone = "UTC"
	}
	mustExec(t, h, "timedatectl set-timezone "+zone)
	if got := mustExec(t, h, "readlink /etc/localtime"); !strings.HasSuffix(got, "/usr/share/zoneinfo/"+zone) {
		t.Errorf("the host's /etc/localtime is %q after set-timezone %s", got, zone)
	}
	if after, _ := filepath.EvalSymlinks("/etc/localtime"); after != machineZone {
		t.Errorf("the machine's /etc/localtime moved from %q to %q", machineZone, after)
	}

	if d := realtimeOffset(t) - before; d > 50e6 || d < -50e6 {
		t.Errorf("the machine's clock moved by %v ns while a host tried to set it", d)
	}
}
