package modules

import (
	"strings"
	"testing"
)

// TestCronUserCrontabOnLabHost: core.cron.present with crontab: true adds,
// changes and removes entries of a user's own crontab, as `crontab -l -u`
// shows them; an entry Ansible wrote is adopted; variables, special_time
// and disabled; bad input refused.
func TestCronUserCrontabOnLabHost(t *testing.T) {
	h := host(t)
	sh(t, h, "dpkg -s cron >/dev/null 2>&1 || { apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q cron >/dev/null; }")
	removeAccounts(t, h, []string{"soulcron"}, nil)
	sh(t, h, "useradd -m -s /bin/sh soulcron; mkdir -p /srv/m")
	t.Cleanup(func() {
		sh(t, h, "crontab -r -u soulcron 2>/dev/null; true")
		removeAccounts(t, h, []string{"soulcron"}, nil)
	})
	const spool = "/var/spool/cron/crontabs/soulcron"
	list := func() string { return sh(t, h, "crontab -l -u soulcron 2>&1 || true") }

	// A hand-written line and an entry an Ansible role left.
	sh(t, h, `printf '# mine\n0 1 * * * /usr/bin/mine\n#Ansible: legacy job\n0 3 * * * /usr/bin/old\n' | crontab -u soulcron -`)

	job := `{name: t, module: core.cron.present, params: {name: "nightly backup", crontab: true, user: soulcron, schedule: "30 2 * * *", job: "/usr/local/bin/backup --quiet"}}`
	converge(t, h, "/srv/m/ct1", job, spool)
	if got := list(); !strings.HasSuffix(got, "#Soul Stack: nightly backup\n30 2 * * * /usr/local/bin/backup --quiet\n") || !strings.Contains(got, "0 1 * * * /usr/bin/mine\n") {
		t.Fatalf("crontab -l:\n%s", got)
	}
	// Changed in place: the check-mode diff shows the line.
	changed := strings.Replace(job, "30 2 * * *", "45 4 * * 1-5", 1)
	if r := apply(t, h, "/srv/m/ct2", "  - "+changed+"\n", true); !r.Changed || !strings.Contains(r.Diff, "-30 2 * * * /usr/local/bin/backup --quiet") || !strings.Contains(r.Diff, "+45 4 * * 1-5 /usr/local/bin/backup --quiet") {
		t.Fatalf("check mode: %+v", r)
	}
	converge(t, h, "/srv/m/ct2", changed, spool)
	if got := list(); strings.Count(got, "/usr/local/bin/backup") != 1 || !strings.Contains(got, "#Soul Stack: nightly backup\n45 4 * * 1-5 /usr/local/bin/backup --quiet\n") {
		t.Fatalf("crontab -l after change:\n%s", got)
	}

	// The Ansible entry is taken over, not duplicated.
	converge(t, h, "/srv/m/ct3", `{name: t, module: core.cron.present, params: {name: "legacy job", crontab: true, user: soulcron, special_time: reboot, job: /usr/bin/new, disabled: true}}`, spool)
	if got := list(); strings.Contains(got, "#Ansible:") || strings.Contains(got, "/usr/bin/old") || !strings.Contains(got, "#Soul Stack: legacy job\n#@reboot /usr/bin/new\n") {
		t.Fatalf("crontab -l after adopting:\n%s", got)
	}

	// A variable goes on top.
	converge(t, h, "/srv/m/ct4", `{name: t, module: core.cron.present, params: {name: MAILTO, env: true, crontab: true, user: soulcron, job: ops@example.com}}`, spool)
	if got := list(); !strings.HasPrefix(got, "MAILTO=ops@example.com\n") {
		t.Fatalf("crontab -l after env:\n%s", got)
	}

	// Removed: the entry and its marker go, the rest stays.
	converge(t, h, "/srv/m/ct5", `{name: t, module: core.cron.present, params: {name: "nightly backup", crontab: true, user: soulcron, state: absent}}`, spool)
	converge(t, h, "/srv/m/ct6", `{name: t, module: core.cron.present, params: {name: MAILTO, env: true, crontab: true, user: soulcron, state: absent}}`, spool)
	if got := list(); got != "# mine\n0 1 * * * /usr/bin/mine\n#Soul Stack: legacy job\n#@reboot /usr/bin/new\n" {
		t.Fatalf("crontab -l after absent:\n%q", got)
	}

	// Bad input: refused at load (literals) or when it runs.
	wantRefused(t, h, "/srv/m/ct-bad1", `{name: t, module: core.cron.present, params: {name: x, crontab: true, special_time: fortnightly, job: "true"}}`, "core.cron.present", "special_time")
	wantRefused(t, h, "/srv/m/ct-bad2", `{name: t, module: core.cron.present, params: {name: x, crontab: true, user: soulcron, schedule: "${ '* * *' }", job: "true"}}`, "core.cron.present", "schedule")
	wantFailed(t, h, "/srv/m/ct-bad3", `{name: t, module: core.cron.present, params: {name: x, crontab: true, user: soulnosuch, schedule: "@daily", job: "true"}}`, `param "user"`, "no user")
	wantFailed(t, h, "/srv/m/ct-bad4", `{name: t, module: core.cron.present, params: {name: "two words", schedule: "@daily", job: "true"}}`, `param "name"`)
	if got := list(); got != "# mine\n0 1 * * * /usr/bin/mine\n#Soul Stack: legacy job\n#@reboot /usr/bin/new\n" {
		t.Fatalf("a refused task changed the crontab:\n%q", got)
	}
}
