package modules

import (
	"strings"
	"testing"
)

// TestModulesRunUnderSoulUnitSandbox: every module of this suite runs
// under the sandboxing options of the packaged soul unit
// (packaging/soul.service), as the installed soul runs them, so a hardening
// option that breaks a module fails the module's test. Here the sandbox
// itself is checked from inside a task: a seccomp filter is in place
// (SystemCallFilter, ProtectClock, LockPersonality, …), CAP_SYS_TIME is
// out of the bounding set, realtime scheduling is refused
// (RestrictRealtime), a task cannot make a namespace (RestrictNamespaces),
// and the soul shares the host's mount namespace.
func TestModulesRunUnderSoulUnitSandbox(t *testing.T) {
	h := host(t)
	script := `grep -E '^(Seccomp|CapBnd):' /proc/self/status > status; ` +
		`if chrt -f 1 true 2>/dev/null; then echo realtime; else echo denied; fi > chrt; ` +
		`readlink /proc/self/ns/mnt > mntns; readlink /proc/1/ns/mnt >> mntns; ` +
		`if unshare --uts true 2>/dev/null; then echo made; else echo denied; fi > unshare`
	r := apply(t, h, "/srv/sandbox", `  - {name: t, module: core.cmd.shell, params: {cmd: "`+script+`", cwd: /srv/sandbox}}`+"\n", false)
	if r.Failed {
		t.Fatalf("exec task failed: %s\n%s", r.Msg, r.Stderr)
	}
	status := sh(t, h, "cat /srv/sandbox/status")
	if !strings.Contains(status, "Seccomp:\t2") {
		t.Errorf("no seccomp filter on the soul's task:\n%s", status)
	}
	const capSysTime = 25
	var bnd uint64
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "CapBnd:\t"); ok {
			for _, c := range strings.TrimSpace(v) {
				bnd = bnd<<4 | uint64(strings.IndexRune("0123456789abcdef", c))
			}
		}
	}
	if bnd == 0 || bnd&(1<<capSysTime) != 0 {
		t.Errorf("CAP_SYS_TIME in the bounding set (%#x):\n%s", bnd, status)
	}
	if got := strings.TrimSpace(sh(t, h, "cat /srv/sandbox/chrt")); got != "denied" {
		t.Errorf("realtime scheduling from a task: %s, want denied (RestrictRealtime)", got)
	}
	// The soul shares the host's mount namespace, or the filesystems that
	// core.mount.mounted mounts would not be the host's.
	if ns := strings.Fields(sh(t, h, "cat /srv/sandbox/mntns")); len(ns) != 2 || ns[0] != ns[1] {
		t.Errorf("the soul's task runs in mount namespace %v, PID 1 in another", ns)
	}
	if got := strings.TrimSpace(sh(t, h, "cat /srv/sandbox/unshare")); got != "denied" {
		t.Errorf("unshare from a task: %s, want denied (RestrictNamespaces)", got)
	}
}
