package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

func TestEditCrontab(t *testing.T) {
	const other = "MAILTO=ops\n# a hand-written job\n0 1 * * * /usr/bin/true\n"
	job := crontabEntry{name: "backup", line: "30 2 * * * /usr/local/bin/backup"}
	tests := []struct {
		name string
		in   string
		e    crontabEntry
		want string
	}{
		{"added to an empty crontab", "", job, "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n"},
		{"added after other lines, which stay", other, job, other + "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n"},
		{"converged", other + "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n", job, other + "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n"},
		{"changed in place", "#Soul Stack: backup\n0 0 * * * old\n" + other, job, "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n" + other},
		{"Ansible's entry adopted", "#Ansible: backup\n0 0 * * * old\n" + other, job, "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n" + other},
		{"duplicates collapse into the first", "#Soul Stack: backup\n1 * * * * a\n" + other + "#Ansible: backup\n2 * * * * b\n", job,
			"#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n" + other},
		{"a marker without its job line", other + "#Soul Stack: backup\n", job, other + "#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n"},
		{"a marker before another marker keeps the next entry", "#Soul Stack: backup\n#Soul Stack: x\n1 * * * * x\n", job,
			"#Soul Stack: backup\n30 2 * * * /usr/local/bin/backup\n#Soul Stack: x\n1 * * * * x\n"},
		{"disabled", other, crontabEntry{name: "backup", line: "#@reboot /bin/b"}, other + "#Soul Stack: backup\n#@reboot /bin/b\n"},
		{"removed", "#Soul Stack: backup\n0 0 * * * old\n" + other, crontabEntry{name: "backup", absent: true}, other},
		{"removing the last entry empties the crontab", "#Ansible: backup\n0 0 * * * old\n", crontabEntry{name: "backup", absent: true}, ""},
		{"removing a missing entry", other, crontabEntry{name: "backup", absent: true}, other},
		{"other names untouched", "#Soul Stack: backup2\n1 * * * * x\n", crontabEntry{name: "backup", absent: true}, "#Soul Stack: backup2\n1 * * * * x\n"},
		{"variable on top", "0 1 * * * /usr/bin/true\n", crontabEntry{name: "PATH", line: "PATH=/opt/bin", env: true}, "PATH=/opt/bin\n0 1 * * * /usr/bin/true\n"},
		{"variable changed in place", other, crontabEntry{name: "MAILTO", line: "MAILTO=root", env: true}, strings.Replace(other, "MAILTO=ops", "MAILTO=root", 1)},
		{"variable prefix of another is not it", "MAILTO_X=1\n", crontabEntry{name: "MAILTO", line: "MAILTO=root", env: true}, "MAILTO=root\nMAILTO_X=1\n"},
		{"variable removed", other, crontabEntry{name: "MAILTO", env: true, absent: true}, strings.TrimPrefix(other, "MAILTO=ops\n")},
		{"a final newline is added", "0 1 * * * /usr/bin/true", crontabEntry{name: "X", env: true, absent: true}, "0 1 * * * /usr/bin/true\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := editCrontab(tc.in, tc.e)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("crontab (-want +got):\n%s", d)
			}
			if again := editCrontab(got, tc.e); again != got {
				t.Fatalf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestParseCronCall(t *testing.T) {
	base := func(kv ...any) map[string]any {
		p := map[string]any{"name": "backup", "schedule": "@daily", "job": "true"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(p, kv[i].(string))
				continue
			}
			p[kv[i].(string)] = kv[i+1]
		}
		return p
	}
	good := []struct {
		name  string
		p     map[string]any
		sched string
	}{
		{"special_time", base("schedule", nil, "special_time", "reboot"), "@reboot"},
		{"Ansible's fields", base("schedule", nil, "minute", int64(0), "hour", "5,2", "weekday", "1-5"), "0 5,2 * * 1-5"},
		{"free-text name in a crontab", base("name", "check dirs", "crontab", true), "@daily"},
		{"variable entry", map[string]any{"name": "PATH", "job": "/opt/bin", "env": true, "crontab": true}, ""},
		{"env false is no variable entry", base("env", false), "@daily"},
		{"absent needs no job", map[string]any{"name": "check dirs", "crontab": true, "state": "absent"}, ""},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCronCall(newArgs(tc.p))
			if err != nil {
				t.Fatal(err)
			}
			if c.sched != tc.sched {
				t.Fatalf("schedule %q, want %q", c.sched, tc.sched)
			}
		})
	}
	bad := []struct {
		name  string
		p     map[string]any
		param string
	}{
		{"schedule and special_time", base("special_time", "daily"), "special_time"},
		{"neither", base("schedule", nil), "schedule"},
		{"schedule and a field", base("hour", "2"), "schedule"},
		{"a field with a space", base("schedule", nil, "hour", "1 2"), "minute"},
		{"a bad field", base("schedule", nil, "minute", "61"), "schedule"},
		{"free-text name for a cron.d file", base("name", "check dirs"), "name"},
		{"two-line name", base("name", "a\nb", "crontab", true), "name"},
		{"variable entry in cron.d", base("env", true), "env"},
		{"env map in a crontab", base("env", map[string]any{"A": "b"}, "crontab", true), "env"},
		{"variable with a schedule", base("name", "PATH", "env", true, "crontab", true), "env"},
		{"bad variable name", map[string]any{"name": "A-B", "job": "x", "env": true, "crontab": true}, "name"},
		{"env a string", base("env", "MAILTO=x"), "env"},
		{"bad state", base("state", "gone"), "state"},
		{"bad user", base("user", "Bad User"), "user"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCronCall(newArgs(tc.p))
			wantErrContains(t, err, `"`+tc.param+`"`)
		})
	}
}

func TestCronDisabledAndSpecialTime(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/cron.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	file := filepath.Join(root, "etc/cron.d/boot")
	p := map[string]any{"name": "boot", "special_time": "reboot", "job": "/usr/local/bin/warm", "disabled": true}
	res := run(t, "core.cron.present", p, &module.Env{Root: root, Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "+#@reboot root /usr/local/bin/warm") {
		t.Fatalf("diff %q", res.Diff)
	}
	wantChanged(t, run(t, "core.cron.present", p, env), true)
	got, _ := os.ReadFile(file)
	if !strings.HasSuffix(string(got), "\n#@reboot root /usr/local/bin/warm\n") {
		t.Fatalf("cron file:\n%s", got)
	}
	s := snap(t, file)
	wantChanged(t, run(t, "core.cron.present", p, env), false)
	s.untouched(t, file)
	p["disabled"] = false
	wantChanged(t, run(t, "core.cron.present", p, env), true)
	if got, _ := os.ReadFile(file); !strings.HasSuffix(string(got), "\n@reboot root /usr/local/bin/warm\n") {
		t.Fatalf("cron file:\n%s", got)
	}
}

// TestCronWithoutCronDir: without /etc/cron.d (cron not installed) the
// error says to install cron, not to set a makedirs param the module does
// not have; check mode reports the change it would make.
func TestCronWithoutCronDir(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := map[string]any{"name": "backup", "schedule": "@daily", "job": "true"}
	_, err := runErr(t, "core.cron.present", p, &module.Env{Root: root})
	wantErrContains(t, err, "/etc/cron.d does not exist", "install cron")
	if strings.Contains(err.Error(), "makedirs") {
		t.Fatalf("error %q advises makedirs", err)
	}
	res := run(t, "core.cron.present", p, &module.Env{Root: root, Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "+@daily root true") || !strings.Contains(res.Diff, "cron must be installed first") {
		t.Fatalf("diff %q", res.Diff)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/cron.d")); !os.IsNotExist(err) {
		t.Fatalf("check mode created /etc/cron.d: %v", err)
	}
	// Absent with no /etc/cron.d has nothing to do.
	wantChanged(t, run(t, "core.cron.present", map[string]any{"name": "backup", "state": "absent"}, &module.Env{Root: root}), false)
	// A crontab cannot be confined.
	_, err = runErr(t, "core.cron.present", map[string]any{"name": "x", "crontab": true, "schedule": "@daily", "job": "true"}, &module.Env{Root: root})
	wantErrContains(t, err, "cannot be confined")
}
