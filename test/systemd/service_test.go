package systemd

import (
	"strings"
	"testing"
	"time"
)

// TestServices drives core.service.* through systemd on one host booted
// once; each subtest starts from the state the previous one left.
func TestServices(t *testing.T) {
	requireRoot(t)
	h := newHost(t)
	mainPID := func(unit string) string {
		return sh(t, h, "systemctl show -p MainPID --value "+unit)
	}
	state := func(unit string) string {
		return sh(t, h, "systemctl is-active "+unit+" || true")
	}

	t.Run("init is systemd", func(t *testing.T) {
		r := one(t, h, "  - name: facts\n    module: core.exec.run\n    params: {command: 'test -d /run/systemd/system && echo yes'}\n", false)
		if r.Failed {
			t.Fatalf("%+v", r)
		}
	})

	t.Run("restarted changes MainPID", func(t *testing.T) {
		before := mainPID("redis-server")
		r := one(t, h, svc("restarted", "redis-server"), false)
		if r.Failed || !r.Changed {
			t.Fatalf("restarted: %+v", r)
		}
		if after := mainPID("redis-server"); after == before || after == "0" {
			t.Errorf("redis-server MainPID %s before core.service.restarted, %s after", before, after)
		}
		if got := state("redis-server"); got != "active" {
			t.Errorf("redis-server is %s", got)
		}
	})

	t.Run("reloaded keeps MainPID", func(t *testing.T) {
		// redis-server's unit has no ExecReload; a drop-in gives it a
		// harmless one (its sandbox lets it exec only redis-server), and
		// systemd does not notice a new drop-in by itself: daemon-reload.
		sh(t, h, "mkdir -p /etc/systemd/system/redis-server.service.d && printf '[Service]\\nExecReload=/usr/bin/redis-server --version\\n' >/etc/systemd/system/redis-server.service.d/reload.conf && systemctl daemon-reload")
		before := mainPID("redis-server")
		r := one(t, h, svc("reloaded", "redis-server"), false)
		if r.Failed || !r.Changed {
			t.Fatalf("reloaded: %+v", r)
		}
		if after := mainPID("redis-server"); after != before {
			t.Errorf("reloaded changed MainPID %s → %s", before, after)
		}
	})

	t.Run("stopped and running, with check mode", func(t *testing.T) {
		r := one(t, h, svc("stopped", "redis-server"), true)
		if !r.Changed || r.Failed || !strings.Contains(r.Msg, "would stop") {
			t.Errorf("check stopped: %+v", r)
		}
		if got := state("redis-server"); got != "active" {
			t.Fatalf("check mode stopped redis-server: %s", got)
		}
		if r := one(t, h, svc("stopped", "redis-server"), false); !r.Changed || r.Failed {
			t.Errorf("stopped: %+v", r)
		}
		if got := state("redis-server"); got != "inactive" {
			t.Errorf("after stopped: %s", got)
		}
		if r := one(t, h, svc("stopped", "redis-server"), false); r.Changed || r.Failed {
			t.Errorf("stopped again: %+v", r)
		}
		if r := one(t, h, svc("running", "redis-server"), false); !r.Changed || r.Failed {
			t.Errorf("running: %+v", r)
		}
		if got := state("redis-server"); got != "active" {
			t.Errorf("after running: %s", got)
		}
		if r := one(t, h, svc("running", "redis-server"), false); r.Changed || r.Failed {
			t.Errorf("running again: %+v", r)
		}
	})

	t.Run("enabled survives a reboot", func(t *testing.T) {
		sh(t, h, "systemctl disable redis-server")
		if r := one(t, h, svc("enabled", "redis-server"), true); !r.Changed || !strings.Contains(r.Msg, "would enable") {
			t.Errorf("check enabled: %+v", r)
		}
		if got := sh(t, h, "systemctl is-enabled redis-server || true"); got != "disabled" {
			t.Fatalf("check mode enabled it: %s", got)
		}
		if r := one(t, h, svc("enabled", "redis-server"), false); !r.Changed || r.Failed {
			t.Fatalf("enabled: %+v", r)
		}
		if r := one(t, h, svc("enabled", "redis-server"), false); r.Changed || r.Failed {
			t.Errorf("enabled again: %+v", r)
		}
		before, _ := h.BootID()
		if err := h.Reboot(t.Context()); err != nil {
			t.Fatal(err)
		}
		if now, _ := h.BootID(); now == before {
			t.Fatal("the host did not reboot (same boot id)")
		}
		deadline := time.Now().Add(15 * time.Second)
		for state("redis-server") != "active" {
			if time.Now().After(deadline) {
				t.Fatalf("redis-server is %s after the reboot: enabled did not survive it", state("redis-server"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("a unit written by a task, changed and reloaded", func(t *testing.T) {
		unit := func(word string) string {
			return "[Unit]\nDescription=demo\n[Service]\nExecStart=/bin/sh -c 'echo " + word + " >/run/demo.out; exec sleep infinity'\n[Install]\nWantedBy=multi-user.target\n"
		}
		write := func(word string) string {
			return "  - name: unit\n    module: core.file.present\n    params:\n      path: /etc/systemd/system/demo.service\n      content: " + quote(unit(word)) + "\n"
		}
		res, stderr := apply(t, h, write("one")+svc("running", "demo"), false)
		if len(res) != 2 || res[1].Failed || !res[1].Changed {
			t.Fatalf("write and start: %+v %s", res, stderr)
		}
		if got := sh(t, h, "cat /run/demo.out"); got != "one" {
			t.Errorf("demo wrote %q", got)
		}
		// The loaded unit changes on disk: systemd says NeedDaemonReload,
		// and restarted reloads first, so the new ExecStart runs.
		res, stderr = apply(t, h, write("two"), false)
		if len(res) != 1 || !res[0].Changed {
			t.Fatalf("rewrite: %+v %s", res, stderr)
		}
		if got := sh(t, h, "systemctl show -p NeedDaemonReload --value demo"); got != "yes" {
			t.Fatalf("NeedDaemonReload=%s after the unit changed", got)
		}
		if r := one(t, h, svc("restarted", "demo"), true); !r.Changed || r.Failed {
			t.Errorf("check restarted: %+v", r)
		}
		if got := sh(t, h, "systemctl show -p NeedDaemonReload --value demo"); got != "yes" {
			t.Errorf("check mode reloaded systemd: NeedDaemonReload=%s", got)
		}
		if r := one(t, h, svc("restarted", "demo"), false); !r.Changed || r.Failed {
			t.Fatalf("restarted: %+v", r)
		}
		if got := sh(t, h, "cat /run/demo.out; systemctl show -p NeedDaemonReload --value demo"); got != "two\nno" {
			t.Errorf("after restarted: %q, want the new ExecStart's output and no reload needed", got)
		}
	})

	t.Run("masked", func(t *testing.T) {
		sh(t, h, "systemctl mask demo-masked")
		for _, op := range []string{"running", "restarted", "enabled"} {
			r := one(t, h, svc(op, "demo-masked"), false)
			if !r.Failed || !strings.Contains(r.Msg, "masked") || !strings.Contains(r.Msg, "lab-host-1") {
				t.Errorf("%s on a masked unit: %+v", op, r)
			}
		}
		if got := state("demo-masked"); got != "inactive" {
			t.Errorf("the masked unit is %s", got)
		}
		if r := one(t, h, svc("stopped", "demo-masked"), false); r.Failed || r.Changed {
			t.Errorf("stopped on a masked, stopped unit: %+v", r)
		}
	})

	t.Run("missing unit", func(t *testing.T) {
		r := one(t, h, svc("running", "no-such-unit"), false)
		if !r.Failed || !strings.Contains(r.Msg, "no-such-unit") || !strings.Contains(r.Msg, "lab-host-1") {
			t.Errorf("missing unit: %+v, want a failure naming the unit and the host", r)
		}
	})

	t.Run("a unit that fails to start", func(t *testing.T) {
		// Type=oneshot: systemctl start waits for it and reports the
		// failure (a Type=simple unit counts as started once forked).
		sh(t, h, `printf '[Service]\nType=oneshot\nExecStart=/bin/sh -c "echo boom-marker-17 >&2; exit 3"\n' >/etc/systemd/system/broken.service`)
		r := one(t, h, svc("running", "broken"), false)
		if !r.Failed || !strings.Contains(r.Msg, "broken") || !strings.Contains(r.Stderr, "boom-marker-17") {
			t.Errorf("failing unit: %+v, want a failure with its journal in stderr", r)
		}
		r = one(t, h, svc("restarted", "broken"), false)
		if !r.Failed || !strings.Contains(r.Stderr, "boom-marker-17") {
			t.Errorf("restarted failing unit: %+v", r)
		}
	})

	t.Run("state and disable", func(t *testing.T) {
		task := func(state string, enabled bool) string {
			return "  - name: state\n    module: core.service.state\n    params: {name: redis-server, state: " + state +
				", enabled: " + map[bool]string{true: "true", false: "false"}[enabled] + "}\n"
		}
		if r := one(t, h, task("stopped", false), true); !r.Changed || r.Failed {
			t.Errorf("check stopped+disabled: %+v", r)
		}
		if got := sh(t, h, "systemctl is-active redis-server; systemctl is-enabled redis-server"); got != "active\nenabled" {
			t.Fatalf("check mode changed redis-server: %q", got)
		}
		if r := one(t, h, task("stopped", false), false); !r.Changed || r.Failed || !strings.Contains(r.Diff, "enabled -> disabled") {
			t.Errorf("stopped+disabled: %+v", r)
		}
		if got := sh(t, h, "systemctl is-active redis-server; systemctl is-enabled redis-server || true"); got != "inactive\ndisabled" {
			t.Errorf("after stopped+disabled: %q", got)
		}
		if r := one(t, h, task("stopped", false), false); r.Changed || r.Failed {
			t.Errorf("stopped+disabled again: %+v", r)
		}
		if r := one(t, h, task("started", true), false); !r.Changed || r.Failed {
			t.Errorf("started+enabled: %+v", r)
		}
		if got := sh(t, h, "systemctl is-active redis-server; systemctl is-enabled redis-server"); got != "active\nenabled" {
			t.Errorf("after started+enabled: %q", got)
		}
	})

	t.Run("names refused by validation", func(t *testing.T) {
		for _, name := range []string{"a..b", "redis;reboot", "$(reboot)", "-H"} {
			res, stderr := apply(t, h, svc("restarted", name), false)
			if len(res) != 0 || !strings.Contains(stderr, "not a valid service name") {
				t.Errorf("name %q: results %+v, stderr %q; want a validation error before anything runs", name, res, stderr)
			}
		}
	})
}

// quote makes s a YAML double-quoted scalar.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
