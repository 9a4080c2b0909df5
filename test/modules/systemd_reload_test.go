package modules

import (
	"strings"
	"testing"
)

// TestSystemdDaemonReloadedOnLabHost: core.systemd.daemon_reloaded with no
// unit named (Ansible's systemd daemon_reload: true alone) reloads systemd
// when a loaded unit's file was edited: check mode says so and leaves the
// unit stale, the run reloads it, and a second run changes nothing.
func TestSystemdDaemonReloadedOnLabHost(t *testing.T) {
	h := host(t)
	const unit = "/etc/systemd/system/soulreload.service"
	reset := "systemctl stop soulreload.service 2>/dev/null; rm -f " + unit + "; systemctl daemon-reload; mkdir -p /srv/dr"
	sh(t, h, reset)
	t.Cleanup(func() { sh(t, h, reset) })
	sh(t, h, "printf '[Service]\\nExecStart=/bin/sleep infinity\\n' > "+unit+"; systemctl daemon-reload; systemctl start soulreload.service")
	sh(t, h, "printf '[Service]\\nExecStart=/bin/sleep 1000000\\n' > "+unit)
	need := func() string {
		return strings.TrimSpace(sh(t, h, "systemctl show -p NeedDaemonReload --value soulreload.service"))
	}
	if got := need(); got != "yes" {
		t.Fatalf("setup: NeedDaemonReload=%s", got)
	}
	const task = "  - {name: t, module: core.systemd.daemon_reloaded}\n"
	r := apply(t, h, "/srv/dr/check", task, true)
	if r.Failed || !r.Changed || !strings.Contains(r.Msg, "soulreload.service") {
		t.Fatalf("check mode: %+v", r)
	}
	if got := need(); got != "yes" {
		t.Fatalf("check mode reloaded systemd: NeedDaemonReload=%s", got)
	}
	if r := apply(t, h, "/srv/dr/run", task, false); r.Failed || !r.Changed {
		t.Fatalf("apply: %+v", r)
	}
	if got := need(); got != "no" {
		t.Fatalf("after the reload: NeedDaemonReload=%s", got)
	}
	if r := apply(t, h, "/srv/dr/again", task, false); r.Failed || r.Changed {
		t.Fatalf("second apply: %+v", r)
	}
	if r := apply(t, h, "/srv/dr/force", "  - {name: t, module: core.systemd.daemon_reloaded, params: {force: true}}\n", false); r.Failed || !r.Changed {
		t.Fatalf("force: %+v", r)
	}
}
