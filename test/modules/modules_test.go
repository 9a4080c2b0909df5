package modules

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/soulstack/soulstack/internal/lab"
)

// stamp identifies a file's inode, mtime and ctime on the host.
func stamp(t *testing.T, h *lab.Host, p string) string {
	t.Helper()
	return sh(t, h, "stat -c '%i %Y.%y %Z %a %s' "+p+" 2>/dev/null || echo none")
}

// converge runs task (one YAML task line) in check mode, then twice for
// real, asserting: check → changed with a diff and the watched paths
// untouched; apply → changed; again → unchanged and the paths untouched.
func converge(t *testing.T, h *lab.Host, dir, task string, watch ...string) {
	t.Helper()
	snapAll := func() string {
		var b strings.Builder
		for _, p := range watch {
			b.WriteString(stamp(t, h, p) + "\n")
		}
		return b.String()
	}
	before := snapAll()
	r := apply(t, h, dir, "  - "+task+"\n", true)
	if r.Failed || !r.Changed || r.Diff == "" {
		t.Fatalf("check mode: %+v", r)
	}
	if now := snapAll(); now != before {
		t.Fatalf("check mode touched something:\n%s->\n%s", before, now)
	}
	if r := apply(t, h, dir, "  - "+task+"\n", false); r.Failed || !r.Changed {
		t.Fatalf("apply: %+v", r)
	}
	after := snapAll()
	if r := apply(t, h, dir, "  - "+task+"\n", false); r.Failed || r.Changed {
		t.Fatalf("second apply: %+v", r)
	}
	if now := snapAll(); now != after {
		t.Fatalf("second apply touched something:\n%s->\n%s", after, now)
	}
}

// wantRefused runs task for real and asserts it is refused: a literal
// bad value when the destiny loads (main.yml:line, the param and the
// module), a value computed by ${…} when the module runs (the module, the
// param and the host). Either way nothing ran.
func wantRefused(t *testing.T, h *lab.Host, dir, task, module, param string) {
	t.Helper()
	raw := applyRaw(t, h, dir, "input: {}\ntasks:\n  - "+task+"\n", false)
	var res struct {
		Tasks  []taskResult `json:"tasks"`
		Failed bool         `json:"failed"`
		Msg    string       `json:"msg"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("soul apply output %q: %v", raw, err)
	}
	var wants []string
	msg := res.Msg
	if atLoad := !strings.Contains(task, "${"); atLoad != (len(res.Tasks) == 0) {
		t.Fatalf("%s: refused at load %v, want %v: %s", task, len(res.Tasks) == 0, atLoad, raw)
	}
	if len(res.Tasks) == 0 {
		wants = []string{"main.yml:3:", fmt.Sprintf("param %s of %s", param, module)}
	} else {
		host := strings.TrimSpace(sh(t, h, "hostname"))
		msg = res.Tasks[0].Msg
		wants = []string{module + " on " + host, fmt.Sprintf("param %q", param)}
	}
	for _, want := range wants {
		if !res.Failed || !strings.Contains(msg, want) {
			t.Fatalf("%s: failed %v, msg %q does not say %q", task, res.Failed, msg, want)
		}
	}
}

func TestCronOnLabHost(t *testing.T) {
	h := host(t)
	sh(t, h, "mkdir -p /etc/cron.d /srv/m/cron; rm -f /etc/cron.d/soulbackup")
	converge(t, h, "/srv/m/cron", `{name: t, module: core.cron.present, params: {name: soulbackup, schedule: "*/10 3 * * 1-5", job: "/usr/local/bin/backup --quiet", env: {MAILTO: ops}}}`, "/etc/cron.d/soulbackup")
	if got := sh(t, h, "tail -n 2 /etc/cron.d/soulbackup; stat -c %a /etc/cron.d/soulbackup"); got != "MAILTO=ops\n*/10 3 * * 1-5 root /usr/local/bin/backup --quiet\n644\n" {
		t.Fatalf("cron file: %q", got)
	}
	wantRefused(t, h, "/srv/m/cron-bad", `{name: t, module: core.cron.present, params: {name: bad, schedule: "61 * * * *", job: "true"}}`, "core.cron.present", "schedule")
	wantRefused(t, h, "/srv/m/cron-bad2", `{name: t, module: core.cron.present, params: {name: bad, schedule: "${ '61 * * * *' }", job: "true"}}`, "core.cron.present", "schedule")
	if got := sh(t, h, "ls /etc/cron.d/bad 2>&1 || true"); !strings.Contains(got, "No such file") {
		t.Fatalf("a refused job left a file: %q", got)
	}
	converge(t, h, "/srv/m/cron-rm", `{name: t, module: core.cron.present, params: {name: soulbackup, state: absent}}`)
}

func TestAuthorizedKeyOnLabHost(t *testing.T) {
	h := host(t)
	const keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ5UqUXbk1eJrV8zEtKoqNtG7bKxRKNbsNDSyE8mvKC alice@a"
	sh(t, h, "id alice >/dev/null 2>&1 || useradd -m -s /bin/sh alice; rm -rf /home/alice/.ssh; mkdir -p /srv/m")
	converge(t, h, "/srv/m/key", `{name: t, module: core.ssh.authorized_key, params: {user: alice, key: "`+keyA+`"}}`, "/home/alice/.ssh/authorized_keys")
	if got := sh(t, h, "stat -c '%U %a' /home/alice/.ssh /home/alice/.ssh/authorized_keys; cat /home/alice/.ssh/authorized_keys"); got != "alice 700\nalice 600\n"+keyA+"\n" {
		t.Fatalf("authorized_keys: %q", got)
	}
	wantRefused(t, h, "/srv/m/key-bad", `{name: t, module: core.ssh.authorized_key, params: {user: alice, key: "ssh-rsa AAAAnotakey alice"}}`, "core.ssh.authorized_key", "key")
	wantRefused(t, h, "/srv/m/key-bad2", `{name: t, module: core.ssh.authorized_key, params: {user: alice, key: "${ 'ssh-rsa AAAAnotakey alice' }"}}`, "core.ssh.authorized_key", "key")
	// alice owns her home: a link she plants at .ssh/authorized_keys is
	// refused, not written through as root.
	sh(t, h, "rm -rf /home/alice/.ssh && setpriv --reuid=alice --regid=alice --init-groups sh -c 'mkdir -m 700 /home/alice/.ssh && ln -s /etc/shadow /home/alice/.ssh/authorized_keys'")
	before := stamp(t, h, "/etc/shadow")
	if r := apply(t, h, "/srv/m/key-h1", `  - {name: t, module: core.ssh.authorized_key, params: {user: alice, key: "`+keyA+`"}}`+"\n", false); !r.Failed {
		t.Fatalf("a planted link was written through: %+v", r)
	}
	if now := stamp(t, h, "/etc/shadow"); now != before {
		t.Fatalf("/etc/shadow touched: %s -> %s", before, now)
	}
}

func TestHostnameAndTimezoneOnLabHost(t *testing.T) {
	h := host(t)
	orig := strings.TrimSpace(sh(t, h, "hostname"))
	origFile := sh(t, h, "cat /etc/hostname 2>/dev/null || true")
	origTZ := sh(t, h, "readlink /etc/localtime || true")
	t.Cleanup(func() {
		sh(t, h, fmt.Sprintf("hostname %s; printf %%s %s > /etc/hostname; ln -sf %s /etc/localtime", orig, shq(origFile), shq(strings.TrimSpace(origTZ))))
	})
	sh(t, h, "mkdir -p /srv/m")
	converge(t, h, "/srv/m/hn", `{name: t, module: core.system.hostname, params: {name: renamed-1.lab}}`, "/etc/hostname")
	if got := sh(t, h, "hostname; cat /etc/hostname"); got != "renamed-1.lab\nrenamed-1.lab\n" {
		t.Fatalf("host name: %q", got)
	}
	wantRefused(t, h, "/srv/m/hn-bad", `{name: t, module: core.system.hostname, params: {name: "bad_name"}}`, "core.system.hostname", "name")

	converge(t, h, "/srv/m/tz", `{name: t, module: core.system.timezone, params: {name: Europe/Berlin}}`, "/etc/localtime")
	if got := sh(t, h, "readlink /etc/localtime; env -u TZ date +%Z"); !strings.HasPrefix(got, "/usr/share/zoneinfo/Europe/Berlin\n") || !strings.Contains(got, "CE") {
		t.Fatalf("time zone: %q", got)
	}
	wantRefused(t, h, "/srv/m/tz-bad", `{name: t, module: core.system.timezone, params: {name: "${ 'Mars/Olympus' }"}}`, "core.system.timezone", "name")
}

func TestSystemdUnitOnLabHost(t *testing.T) {
	h := host(t)
	const unit = "/etc/systemd/system/soultest.service"
	sh(t, h, "systemctl disable --now soultest.service 2>/dev/null; rm -f "+unit+"; systemctl daemon-reload; mkdir -p /srv/m")
	t.Cleanup(func() { sh(t, h, "systemctl disable --now soultest.service; rm -f "+unit+"; systemctl daemon-reload") })
	task := func(desc string) string {
		return `{name: t, module: core.systemd.unit, register: u, params: {name: soultest.service, state: started, enabled: true, content: "[Unit]\nDescription=` + desc + `\n[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"}}`
	}
	converge(t, h, "/srv/m/unit", task("v1"), unit)
	if got := sh(t, h, "systemctl is-active soultest.service; systemctl is-enabled soultest.service"); got != "active\nenabled\n" {
		t.Fatalf("unit state: %q", got)
	}
	pid := sh(t, h, "systemctl show -p MainPID --value soultest.service")
	// A changed unit: check mode shows the diff and leaves the file; apply
	// writes it and reloads systemd (daemon_reload: true), a second apply does not.
	out := func(check bool) map[string]any {
		main := "input: {}\ntasks:\n  - " + task("v2") + "\noutput:\n  reload: \"${ register.u.daemon_reload }\"\n"
		raw := applyRaw(t, h, "/srv/m/unit2", main, check)
		var res struct {
			Output map[string]any `json:"output"`
			Tasks  []struct {
				Changed bool   `json:"changed"`
				Failed  bool   `json:"failed"`
				Diff    string `json:"diff"`
				Msg     string `json:"msg"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(raw), &res); err != nil || len(res.Tasks) != 1 || res.Tasks[0].Failed {
			t.Fatalf("apply: %v %s", err, raw)
		}
		res.Output["changed"] = res.Tasks[0].Changed
		res.Output["diff"] = res.Tasks[0].Diff
		return res.Output
	}
	s := stamp(t, h, unit)
	if o := out(true); o["changed"] != true || !strings.Contains(o["diff"].(string), "+Description=v2") || stamp(t, h, unit) != s {
		t.Fatalf("check mode: %v", o)
	}
	if o := out(false); o["changed"] != true || o["reload"] != true {
		t.Fatalf("apply v2: %v", o)
	}
	if got := sh(t, h, "systemctl show -p NeedDaemonReload --value soultest.service; systemctl show -p Description --value soultest.service"); got != "no\nv2\n" {
		t.Fatalf("after v2: %q", got)
	}
	if o := out(false); o["changed"] != false || o["reload"] != false {
		t.Fatalf("second apply v2: %v", o)
	}
	if now := sh(t, h, "systemctl show -p MainPID --value soultest.service"); now != pid {
		t.Fatalf("the unchanged service was restarted: %s -> %s", pid, now)
	}
	wantRefused(t, h, "/srv/m/unit-bad", `{name: t, module: core.systemd.unit, params: {name: soultest, content: x}}`, "core.systemd.unit", "name")
	wantRefused(t, h, "/srv/m/unit-bad2", `{name: t, module: core.systemd.unit, params: {name: "${ 'soultest' }", content: x}}`, "core.systemd.unit", "name")
}

func TestWaitOnLabHost(t *testing.T) {
	h := host(t)
	sh(t, h, "mkdir -p /srv/m; rm -f /srv/m/ready")
	// A file that appears a bit later on the host, and an HTTP server on
	// the lab bridge (where a Keeper would listen) that is healthy from
	// its third request on.
	proc, err := h.Start(t.Context(), []string{"sh", "-c", "sleep 0.5; touch /srv/m/ready"}, "/srv/m/touch.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Kill() })
	ln, err := net.Listen("tcp", net.JoinHostPort(shared.Lab().GatewayIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, task := range []string{
		`{name: t, module: core.wait.file, params: {path: /srv/m/ready, timeout: 20}}`,
		`{name: t, module: core.wait.port, params: {host: "` + shared.Lab().GatewayIP() + `", port: ` + port + `, timeout: 20}}`,
		`{name: t, module: core.wait.http, params: {url: "http://` + ln.Addr().String() + `/healthz", timeout: 20}}`,
	} {
		if r := apply(t, h, "/srv/m/wait", "  - "+task+"\n", false); r.Failed || r.Changed {
			t.Fatalf("%s: %+v", task, r)
		}
	}
	if hits.Load() != 3 {
		t.Fatalf("wait.http returned after %d requests, want 3", hits.Load())
	}
	if r := apply(t, h, "/srv/m/wait", "  - {name: t, module: core.wait.port, params: {port: 1, timeout: 1}}\n", false); !r.Failed || !strings.Contains(r.Msg, "timed out after 1s") {
		t.Fatalf("closed port: %+v", r)
	}
}
