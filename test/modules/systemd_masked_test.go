package modules

import (
	"strings"
	"testing"
)

// TestSystemdMaskedOnLabHost: masked: true stops, then masks a running
// vendor unit (check mode says so and touches nothing, a second run
// changes nothing); a masked unit is not started; masked: false unmasks
// it before starting it; a unit that is not installed can be masked and
// unmasked; a unit file in /etc/systemd/system cannot be masked (as with
// Ansible, systemctl refuses and the task fails unchanged); masked: true
// with a start is refused naming the param.
func TestSystemdMaskedOnLabHost(t *testing.T) {
	h := host(t)
	const vendor = "/usr/lib/systemd/system/soulmask.service"
	const link = "/etc/systemd/system/soulmask.service"
	const local = "/etc/systemd/system/soulmask-local.service"
	const unit = "[Unit]\nDescription=mask me\n[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"
	reset := "for u in soulmask soulmask-local soulmask-none; do systemctl unmask $u.service; systemctl stop $u.service; done 2>/dev/null; " +
		"rm -f " + vendor + " " + local + "; systemctl daemon-reload; mkdir -p /srv/m"
	sh(t, h, reset)
	t.Cleanup(func() { sh(t, h, reset) })
	sh(t, h, "printf %s "+shq(unit)+" > "+vendor+"; cp "+vendor+" "+local+"; systemctl daemon-reload; systemctl start soulmask.service")

	task := func(params string) string {
		return `{name: t, module: core.service.state, params: {name: soulmask.service, ` + params + `}}`
	}
	converge(t, h, "/srv/m/mask", task("state: stopped, masked: true"), link)
	if got := sh(t, h, "systemctl is-active soulmask.service; systemctl is-enabled soulmask.service; readlink "+link+" || true"); got != "inactive\nmasked\n/dev/null\n" {
		t.Fatalf("after masked: true: %q", got)
	}
	if r := apply(t, h, "/srv/m/mask-start", "  - "+task("state: started")+"\n", false); !r.Failed || !strings.Contains(r.Msg, "masked") {
		t.Fatalf("start of a masked unit: %+v", r)
	}
	converge(t, h, "/srv/m/unmask", task("state: started, masked: false"), link)
	if got := sh(t, h, "systemctl is-active soulmask.service; systemctl is-enabled soulmask.service; test -e "+link+" && echo link || echo nolink"); got != "active\ndisabled\nnolink\n" {
		t.Fatalf("after masked: false: %q", got)
	}

	// A runtime mask is made persistent by masked: true.
	sh(t, h, "systemctl stop soulmask.service; systemctl mask --runtime soulmask.service")
	if r := apply(t, h, "/srv/m/mask-rt", "  - "+task("masked: true")+"\n", false); r.Failed || !r.Changed {
		t.Fatalf("masked: true over a runtime mask: %+v", r)
	}
	if got := sh(t, h, "readlink "+link+" || true"); got != "/dev/null\n" {
		t.Fatalf("the mask is not persistent: %q", got)
	}
	sh(t, h, "systemctl unmask soulmask.service; systemctl unmask --runtime soulmask.service")

	// Not installed: masking links the name to /dev/null all the same.
	none := `{name: t, module: core.service.state, params: {name: soulmask-none.service, masked: %s}}`
	converge(t, h, "/srv/m/mask-none", strings.Replace(none, "%s", "true", 1), "/etc/systemd/system/soulmask-none.service")
	converge(t, h, "/srv/m/unmask-none", strings.Replace(none, "%s", "false", 1), "/etc/systemd/system/soulmask-none.service")
	if got := sh(t, h, "test -e /etc/systemd/system/soulmask-none.service && echo link || echo nolink"); got != "nolink\n" {
		t.Fatalf("after unmask of a unit not installed: %q", got)
	}

	// A unit file of its own in /etc/systemd/system: systemctl cannot put
	// the mask there, and the file is left as it was.
	before := stamp(t, h, local)
	r := apply(t, h, "/srv/m/mask-local", "  - {name: t, module: core.service.state, params: {name: soulmask-local.service, masked: true}}\n", false)
	if !r.Failed || r.Changed || !strings.Contains(r.Msg, "failed to mask soulmask-local.service") {
		t.Fatalf("mask of a unit in /etc/systemd/system: %+v", r)
	}
	if now := stamp(t, h, local); now != before {
		t.Fatalf("the refused mask touched %s: %s -> %s", local, before, now)
	}

	wantRefused(t, h, "/srv/m/mask-bad", task(`state: "${ 'started' }", masked: true`), "core.service.state", "masked")
	wantRefused(t, h, "/srv/m/mask-bad2", task(`masked: "yes"`), "core.service.state", "masked")
}
