package core

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

// TestRegistry pins the module list of SPEC §9 and the schema flags the
// DSL validator and the soul's confinement rely on.
func TestRegistry(t *testing.T) {
	want := []string{
		"core.archive.extracted", "core.cloud.absent", "core.cloud.created", "core.cmd.shell", "core.exec.run",
		"core.file.absent", "core.file.block", "core.file.copied", "core.file.directory", "core.file.downloaded", "core.file.line", "core.file.link", "core.file.present", "core.file.rendered",
		"core.file.replace", "core.file.stat",
		"core.group.present", "core.http.request", "core.pkg.installed", "core.pkg.removed",
		"core.service.enabled", "core.service.reloaded", "core.service.restarted", "core.service.running", "core.service.state", "core.service.stopped",
		"core.sysctl.present",
		"core.system.rebooted",
		"core.test.echo", "core.test.fail", "core.test.ping", "core.test.sleep",
		"core.user.present",
	}
	want = append(want, "core.cron.present", "core.ssh.authorized_key", "core.system.hostname", "core.system.timezone", "core.systemd.unit",
		"core.wait.file", "core.wait.http", "core.wait.port", "core.pkg.repository", "core.mount.mounted")
	want = append(want, "core.file.touched")
	want = append(want, "core.pkg.upgraded")
	want = append(want, "core.file.ini")
	want = append(want, "core.user.absent", "core.group.absent")
	want = append(want, "core.git")
	want = append(want, "core.locale.generated", "core.pkg.index_refreshed", "core.service.facts", "core.systemd.daemon_reloaded")
	slices.Sort(want)
	if diff := cmp.Diff(want, module.Names()); diff != "" {
		t.Fatalf("registered modules (-want +got):\n%s", diff)
	}
	unconfinable := []string{"core.group.present", "core.pkg.installed", "core.pkg.removed",
		"core.service.enabled", "core.service.reloaded", "core.service.restarted", "core.service.running", "core.service.state", "core.service.stopped",
		"core.sysctl.present",
		"core.system.rebooted", "core.user.present",
		"core.system.hostname", "core.system.timezone", "core.systemd.unit", "core.pkg.repository", "core.mount.mounted",
		"core.pkg.upgraded"}
	unconfinable = append(unconfinable, "core.user.absent", "core.group.absent")
	unconfinable = append(unconfinable, "core.locale.generated", "core.pkg.index_refreshed", "core.service.facts", "core.systemd.daemon_reloaded")
	readOnly := []string{"core.file.stat", "core.test.echo", "core.test.ping", "core.test.sleep", "core.service.facts"}
	for _, name := range want {
		m, _ := module.Lookup(name)
		s := m.Schema()
		if s.Unconfinable != slices.Contains(unconfinable, name) {
			t.Errorf("%s: Unconfinable = %v", name, s.Unconfinable)
		}
		if s.ReadOnly != slices.Contains(readOnly, name) {
			t.Errorf("%s: ReadOnly = %v", name, s.ReadOnly)
		}
		for p, spec := range s.Params {
			if spec.Description == "" || spec.Type == "" {
				t.Errorf("%s: param %s lacks a type or description", name, p)
			}
		}
	}
}
