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
// out of the bounding set, the kernel log cannot be read
// (ProtectKernelLogs), and a task cannot make a namespace
// (RestrictNamespaces).
func TestModulesRunUnderSoulUnitSandbox(t *testing.T) {
	h := host(t)
	script := `grep -E '^(Seccomp|CapBnd):' /proc/self/status > status; ` +
		`if head -c1 /dev/kmsg >/dev/null 2>&1; then echo readable; else echo denied; fi > kmsg; ` +
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
	if got := strings.TrimSpace(sh(t, h, "cat /srv/sandbox/kmsg")); got != "denied" {
		t.Errorf("/dev/kmsg from a task: %s, want denied (ProtectKernelLogs)", got)
	}
	if got := strings.TrimSpace(sh(t, h, "cat /srv/sandbox/unshare")); got != "denied" {
		t.Errorf("unshare from a task: %s, want denied (RestrictNamespaces)", got)
	}
}
