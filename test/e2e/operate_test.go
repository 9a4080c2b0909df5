package e2e

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// Issue 17's service: a tiny app (a systemd unit whose main process is
// sleep) with a config file, on five systemd hosts.
const (
	opsInc     = "ops-e2e"
	opsUnit    = "opsapp.service"
	opsConf    = "/etc/opsapp.conf"
	opsStamp   = "/var/lib/opsapp.release"
	opsRestart = "Restart the app because its config changed"
	opsWrite   = "Write the config"
	opsStampT  = "Stamp the release"
)

// opsService: create writes the config, installs and starts the unit and
// restarts it when the config changed; rollout does the same one host
// per wave (serial: 1) and stamps each host with the run that rolled it
// out.
var opsService = map[string]string{
	"service.yml": `name: ops
state_schema:
  type: object
  properties:
    version: {type: string}
`,
	"scenario/create/main.yml": `
input:
  version: {type: string, default: v1}
state_changes:
  sets:
    version: "${ input.version }"
tasks:
  - name: ` + opsWrite + `
    module: core.file.present
    register: conf
    params: {path: ` + opsConf + `, content: "version=${ input.version }\n", mode: "0644"}
  - name: Install the unit
    module: core.systemd.unit
    params:
      name: ` + opsUnit + `
      content: |
        [Unit]
        Description=issue 17 e2e app
        [Service]
        ExecStart=/bin/sleep infinity
        [Install]
        WantedBy=multi-user.target
      state: started
      enabled: true
  - name: ` + opsRestart + `
    module: core.service.restarted
    onchanges: [conf]
    params: {name: ` + opsUnit + `}
`,
	"scenario/rollout/main.yml": `
input:
  version: {type: string}
state_changes:
  sets:
    version: "${ input.version }"
tasks:
  - name: Read the deployed config
    module: core.cmd.shell
    register: deployed
    changed_when: false
    failed_when: size(register.deployed) < incarnation.host_count
    params: {cmd: "cat ` + opsConf + `"}
  - name: One host at a time
    serial: 1
    block:
      - name: ` + opsWrite + `
        module: core.file.present
        register: conf
        params: {path: ` + opsConf + `, content: "version=${ input.version }\n", mode: "0644"}
      - name: ` + opsStampT + `
        module: core.file.present
        params: {path: ` + opsStamp + `, content: "${ input.version } by run ${ run.id }\n"}
      - name: ` + opsRestart + `
        module: core.service.restarted
        onchanges: [conf]
        params: {name: ` + opsUnit + `}
`,
}

// TestOperateOverTime is issue 17's Done-when on five systemd lab hosts
// (real souls of the .deb, a real Keeper process): a serial: 1 rollout
// fails on host 3 (the test breaks the unit there), the test repairs it,
// and `soulctl run resume` touches only hosts 3–5 — hosts 1–2 keep their
// unit's MainPID and their files' mtimes — the state commits once and the
// history links both runs; a hand edit of the config on one host shows in
// `soulctl incarnation drift` with its diff, in the metrics and on the
// UI's incarnation page, and is gone after a run of create; an upgrade
// whose state_schema rejects the committed state is refused, and the same
// upgrade with a migration scenario succeeds.
func TestOperateOverTime(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	c := newClusterOf(t, lab.FlavourSystemd, "e2e-ops", 5, nil)
	repo := catalogtest.NewRepo(t)
	commit := repo.Commit(opsService, "ops v1")
	svc, err := c.api.RegisterService(t.Context(), apitypes.RegisterServiceRequest{Name: "ops", Git: "file://" + repo.Dir, Ref: "master"})
	if err != nil || svc.Commit != commit {
		t.Fatalf("registering ops: %+v %v", svc, err)
	}
	acc, err := c.api.CreateIncarnation(t.Context(), apitypes.CreateIncarnationRequest{
		Name: opsInc, Service: "ops", Covens: []string{coven}, Input: map[string]any{"version": "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	requireOutcome(t, c.waitRun(t, acc.ApplyID), store.RunSucceeded)
	runSteps(t, []step{
		{"serial rollout fails on host 3, resumed after the fix", c.testOpsResume},
		{"hand edit shows as drift (soulctl, metrics, UI) until create", c.testOpsDrift},
		{"drift of a host whose soul is down is unknown", c.testOpsDriftHostDown},
		{"upgrade refused by the new schema, then done with a migration", func(t *testing.T) { c.testOpsUpgrade(t, repo) }},
	}, nil)
	t.Logf("the whole issue 17 run took %v", since(start))
}

// opsHost is what the test reads of the app on one host.
type opsHost struct {
	pid         int
	conf, stamp string // content
	confTime    string // mtime, nanoseconds
	stampTime   string
}

// opsHosts reads the app's main PID and its files on every host.
func (c *cluster) opsHosts(t *testing.T) map[string]opsHost {
	t.Helper()
	m := map[string]opsHost{}
	for _, sid := range c.sids() {
		out := c.sh(t, sid, "for f in "+opsConf+" "+opsStamp+"; do if [ -e $f ]; then stat -c %y $f; tr '\\n' ' ' < $f; echo; else echo none; echo; fi; done")
		l := strings.Split(out, "\n")
		if len(l) < 4 {
			t.Fatalf("reading the app's files on %s: %q", sid, out)
		}
		m[sid] = opsHost{pid: c.mainPID(t, sid, opsUnit), confTime: l[0], conf: strings.TrimSpace(l[1]), stampTime: l[2], stamp: strings.TrimSpace(l[3])}
	}
	return m
}

// opsRun starts scenario on the ops incarnation and waits for its end.
func (c *cluster) opsRun(t *testing.T, scenario string, input map[string]any) apitypes.RunDetail {
	t.Helper()
	start := time.Now()
	acc, err := c.api.StartRun(t.Context(), opsInc, apitypes.StartRunRequest{Scenario: scenario, Input: input})
	if err != nil {
		t.Fatalf("starting %s: %v", scenario, err)
	}
	r := c.waitRun(t, acc.ApplyID)
	logRun(t, r, since(start))
	return r
}

// soulctlResult runs soulctl and returns its output and its error (a
// non-zero exit), for commands expected to fail.
func (c *cluster) soulctlResult(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), soulctlBin, args...)
	cmd.Env = append(os.Environ(), "SOULCTL_KEEPER=http://"+c.keeper.addr, "SOULCTL_TOKEN="+c.token, "SOULCTL_CONFIG="+c.logDir+"/soulctl.yaml")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// testOpsResume: the rollout to v2 fails on the third wave's host (an
// ExecStartPre=/bin/false drop-in); hosts 1–2 are done, 4–5 untouched.
// The pending restart of host 3 is listed by `soulctl incarnation
// triggers`. After the repair `soulctl run resume --watch` goes on from
// wave 3: hosts 1–2 keep their MainPID, config and stamp (same mtimes,
// the failed run's stamp), hosts 3–5 are restarted (host 3's restart says
// it was owed since the failed run), one commit, both runs linked in the
// history and on the UI's run page.
func (c *cluster) testOpsResume(t *testing.T) {
	ctx := t.Context()
	sids := c.sids()
	done, victim, later := sids[:2], sids[2], sids[3:]
	hist, err := c.api.IncarnationHistory(ctx, opsInc, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := c.opsHosts(t)
	c.sh(t, victim, "mkdir -p /etc/systemd/system/"+opsUnit+".d && printf '[Service]\\nExecStartPre=/bin/false\\n' > /etc/systemd/system/"+opsUnit+".d/broken.conf && systemctl daemon-reload")

	failed := c.opsRun(t, "rollout", map[string]any{"version": "v2"})
	requireOutcome(t, failed, store.RunFailed)
	assertEqual(t, "waves of the config write", waves(task(failed, opsWrite)), [][]string{{sids[0]}, {sids[1]}, {victim}})
	assertEqual(t, "restart failed on", hostsOf(task(failed, opsRestart), status(domain.StatusFailed)), []string{victim})
	if inc := c.opsIncarnation(t); inc.Status != store.IncarnationErrorLocked || inc.State["version"] != "v1" {
		t.Fatalf("after the failed rollout: %s %v", inc.Status, inc.State)
	}
	mid := c.opsHosts(t)
	for _, sid := range done {
		if mid[sid].pid == before[sid].pid || mid[sid].conf != "version=v2" || mid[sid].stamp != "v2 by run "+failed.ID {
			t.Errorf("%s after the failed run: %+v (before %+v)", sid, mid[sid], before[sid])
		}
	}
	for _, sid := range later {
		if mid[sid] != before[sid] {
			t.Errorf("%s (a later wave) was touched by the failed run: %+v, before %+v", sid, mid[sid], before[sid])
		}
	}
	// The restart the failed run owes host 3 is visible.
	out := c.soulctl(t, "incarnation", "triggers", opsInc)
	if !strings.Contains(out, opsRestart) || !strings.Contains(out, victim) || !strings.Contains(out, failed.ID) {
		t.Errorf("soulctl incarnation triggers does not list the restart owed to %s since %s:\n%s", victim, failed.ID, out)
	}

	c.sh(t, victim, "rm -r /etc/systemd/system/"+opsUnit+".d && systemctl daemon-reload && systemctl reset-failed "+opsUnit)
	start := time.Now()
	out = c.soulctl(t, "run", "resume", failed.ID, "--reason", "e2e: removed the broken drop-in on "+victim, "--watch")
	runs, err := c.api.ListRuns(ctx, opsInc, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	r := c.waitRun(t, runs[0].ID)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunSucceeded)
	assertEqual(t, "resumed_from", r.ResumedFrom, failed.ID)
	if !strings.Contains(out, r.ID) {
		t.Errorf("soulctl run resume does not name the new run %s:\n%s", r.ID, out)
	}

	after := c.opsHosts(t)
	for _, sid := range done {
		if after[sid] != mid[sid] {
			t.Errorf("%s (an earlier wave that succeeded) was touched by the resume: %+v, was %+v", sid, after[sid], mid[sid])
		}
	}
	for _, sid := range append([]string{victim}, later...) {
		a := after[sid]
		if a.pid == 0 || a.pid == mid[sid].pid || a.conf != "version=v2" || a.stamp != "v2 by run "+r.ID || a.stampTime == mid[sid].stampTime {
			t.Errorf("%s after the resume: %+v, was %+v", sid, a, mid[sid])
		}
	}
	for _, sid := range later {
		if after[sid].confTime == mid[sid].confTime {
			t.Errorf("%s: the config was not written by the resume", sid)
		}
	}
	// The read-only probe ran again everywhere (live data), not carried.
	probe := task(r, "Read the deployed config")
	if got := hostsOf(probe, ran); !slices.Equal(got, sids) {
		t.Errorf("the probe ran again on %v, want %v", got, sids)
	}
	for _, h := range probe.Hosts {
		if h.Data["carried_from"] != nil {
			t.Errorf("the probe on %s was carried, not run again", h.SID)
		}
	}
	restart := task(r, opsRestart)
	for _, h := range restart.Hosts {
		carried := h.Data["carried_from"] == failed.ID
		if carried != (h.SID == sids[0] || h.SID == sids[1]) {
			t.Errorf("restart on %s: carried=%v (%+v)", h.SID, carried, h)
		}
		if h.SID == victim && (h.Data["owed_since"] != failed.ID || !strings.Contains(h.Msg, "owed since run "+failed.ID)) {
			t.Errorf("restart on %s does not say it was owed since %s: %q %v", victim, failed.ID, h.Msg, h.Data)
		}
	}
	if ts, err := c.api.ListTriggers(ctx, opsInc, ""); err != nil || len(ts) != 0 {
		t.Errorf("pending triggers after the resume: %+v %v", ts, err)
	}
	if inc := c.opsIncarnation(t); inc.Status != store.IncarnationReady || inc.State["version"] != "v2" {
		t.Errorf("after the resume: %s %v", inc.Status, inc.State)
	}
	now, err := c.api.IncarnationHistory(ctx, opsInc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(now) != len(hist)+1 || now[0].RunID != r.ID || now[0].ResumedFrom != failed.ID || now[0].State["version"] != "v2" {
		t.Errorf("history: %d snapshots (was %d), newest %+v", len(now), len(hist), now[0])
	}
	if page := c.uiPage(t, "/ui/runs/"+r.ID); !strings.Contains(page, `id="resumed-from"`) || !strings.Contains(page, failed.ID) {
		t.Errorf("the UI's run page does not link the resumed run %s", failed.ID)
	}
	if page := c.uiPage(t, "/ui/incarnations/"+opsInc); !strings.Contains(page, `resumes <a href="/ui/runs/`+failed.ID+`">`) {
		t.Errorf("the history on the UI's incarnation page does not link %s to %s", r.ID, failed.ID)
	}
	if out := c.soulctl(t, "incarnation", "history", opsInc); !strings.Contains(out, "(resumes "+failed.ID+")") {
		t.Errorf("soulctl incarnation history does not link the runs:\n%s", out)
	}
}

// opsIncarnation returns the ops incarnation as the API shows it.
func (c *cluster) opsIncarnation(t *testing.T) apitypes.Incarnation {
	t.Helper()
	inc, err := c.api.GetIncarnation(t.Context(), opsInc)
	if err != nil {
		t.Fatal(err)
	}
	return inc
}

// testOpsDrift: a hand edit of the config on host 4 shows in `soulctl
// incarnation drift --wait` with its diff (and the restart that would
// follow), in soulstack_incarnation_drifted/_drift_tasks and as the
// drifted badge with the diff on the UI's incarnation page; the check
// changes nothing; after a run of create the next check is clean
// everywhere.
func (c *cluster) testOpsDrift(t *testing.T) {
	ctx := t.Context()
	victim := c.sids()[3]
	c.sh(t, victim, "echo '# edited by hand' >> "+opsConf)
	before := c.opsHosts(t)

	out := c.soulctl(t, "incarnation", "drift", opsInc, "--wait")
	for _, want := range []string{"Drifted:", "yes (2 task(s) would change)", "--- " + victim + ": " + opsWrite, "-# edited by hand"} {
		if !strings.Contains(out, want) {
			t.Errorf("soulctl incarnation drift lacks %q:\n%s", want, out)
		}
	}
	d, err := c.api.GetDrift(ctx, opsInc)
	if err != nil || d.Report == nil {
		t.Fatalf("drift: %+v %v", d, err)
	}
	rep := d.Report
	if !rep.Drifted || rep.Tasks != 2 {
		t.Errorf("drift report: drifted=%v tasks=%d\n%+v", rep.Drifted, rep.Tasks, rep.Hosts)
	}
	for _, sid := range c.sids() {
		h := rep.Hosts[sid]
		if sid != victim {
			if h.Status != store.DriftClean {
				t.Errorf("%s: %+v, want clean", sid, h)
			}
			continue
		}
		var names []string
		for _, dt := range h.Tasks {
			names = append(names, dt.Task)
		}
		if h.Status != store.DriftDrifted || strings.Join(names, ",") != opsWrite+","+opsRestart || !strings.Contains(h.Tasks[0].Diff, "edited by hand") {
			t.Errorf("%s: %+v, want drifted in %q and %q with the diff", sid, h, opsWrite, opsRestart)
		}
	}
	if after := c.opsHosts(t); !maps.Equal(after, before) {
		t.Errorf("the drift check changed a host: %+v, was %+v", after, before)
	}
	if inc := c.opsIncarnation(t); inc.Status != store.IncarnationReady {
		t.Errorf("after the drift check: %s", inc.Status)
	}
	metrics := c.keeperGet(t, "/metrics")
	for _, want := range []string{`soulstack_incarnation_drifted{incarnation="` + opsInc + `"} 1`, `soulstack_incarnation_drift_tasks{incarnation="` + opsInc + `"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	page := c.uiPage(t, "/ui/incarnations/"+opsInc)
	for _, want := range []string{`class="badge st-drifted" id="drift-badge">drifted</a>`, "<summary>" + opsWrite + "</summary>", "# edited by hand"} {
		if !strings.Contains(page, want) {
			t.Errorf("the UI's incarnation page lacks %q", want)
		}
	}

	if dash := c.uiPage(t, "/ui/"); !strings.Contains(dash, `id="drifted"`) || !strings.Contains(dash, `<a href="/ui/incarnations/`+opsInc+`#drift">`) {
		t.Errorf("the UI's dashboard does not list %s as drifted", opsInc)
	}

	requireOutcome(t, c.opsRun(t, "create", map[string]any{"version": "v2"}), store.RunSucceeded)
	out = c.soulctl(t, "incarnation", "drift", opsInc, "--wait")
	if !strings.Contains(out, "Drifted:") || !strings.Contains(out, " no") {
		t.Errorf("soulctl incarnation drift after create:\n%s", out)
	}
	if d, err := c.api.GetDrift(ctx, opsInc); err != nil || d.Report == nil || d.Report.Drifted || d.Report.Tasks != 0 {
		t.Errorf("drift after create: %+v %v", d.Report, err)
	}
	metrics = c.keeperGet(t, "/metrics")
	for _, want := range []string{`soulstack_incarnation_drifted{incarnation="` + opsInc + `"} 0`, `soulstack_incarnation_drift_tasks{incarnation="` + opsInc + `"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics after create lack %s", want)
		}
	}
	page = c.uiPage(t, "/ui/incarnations/"+opsInc)
	if strings.Contains(page, "st-drifted") || strings.Contains(page, "edited by hand") {
		t.Errorf("the UI's incarnation page still shows the drift after create")
	}
}

// testOpsDriftHostDown (issue 17's faults): the soul of host 5 is stopped;
// a drift check reports that host unknown — neither drifted nor clean —
// and the others clean; once the soul is back the next check is clean.
func (c *cluster) testOpsDriftHostDown(t *testing.T) {
	down := c.sids()[4]
	c.sh(t, down, "systemctl stop "+soulUnit)
	c.waitSouls(t, store.SoulDisconnected, down)
	out := c.soulctl(t, "incarnation", "drift", opsInc, "--wait")
	d, err := c.api.GetDrift(t.Context(), opsInc)
	if err != nil || d.Report == nil {
		t.Fatalf("drift: %+v %v", d, err)
	}
	for _, sid := range c.sids() {
		h := d.Report.Hosts[sid]
		want := store.DriftClean
		if sid == down {
			want = store.DriftUnknown
		}
		if h.Status != want {
			t.Errorf("%s: %+v, want %s", sid, h, want)
		}
	}
	if !strings.Contains(out, down) || !strings.Contains(out, "unknown") {
		t.Errorf("soulctl incarnation drift does not show %s unknown:\n%s", down, out)
	}
	if inc := c.opsIncarnation(t); inc.Status != store.IncarnationReady {
		t.Errorf("after the drift check with a host down: %s", inc.Status)
	}
	c.startSoul(t, down, false)
	c.waitSouls(t, store.SoulConnected, down)
	c.soulctl(t, "incarnation", "drift", opsInc, "--wait")
	if d, err := c.api.GetDrift(t.Context(), opsInc); err != nil || d.Report == nil || d.Report.Hosts[down].Status != store.DriftClean {
		t.Errorf("drift of %s once its soul is back: %+v %v", down, d.Report, err)
	}
}

// testOpsUpgrade: v2 of the service requires a schema key the committed
// state lacks. `soulctl incarnation upgrade` without a migration is
// refused with the schema error and changes nothing; with --migrate the
// migration scenario runs on the new commit, and its state_changes make
// the state fit: the incarnation is on v2 with the migrated state.
func (c *cluster) testOpsUpgrade(t *testing.T, repo *catalogtest.Repo) {
	old := c.opsIncarnation(t)
	v2 := maps.Clone(opsService)
	v2["service.yml"] = `name: ops
state_schema:
  type: object
  properties:
    version: {type: string}
    conf_format: {type: integer, minimum: 2}
  required: [version, conf_format]
`
	v2["scenario/migrate-conf/main.yml"] = `
state_changes:
  sets: {conf_format: 2}
tasks:
  - name: Note the config format
    module: core.file.present
    params: {path: /etc/opsapp.format, content: "2\n"}
`
	c2 := repo.Commit(v2, "ops v2: conf_format required")

	out, err := c.soulctlResult(t, "incarnation", "upgrade", opsInc, "--ref", "master")
	if err == nil || !strings.Contains(out, "conf_format") || !strings.Contains(out, "migrate") {
		t.Errorf("upgrade without a migration: %v\n%s", err, out)
	}
	if inc := c.opsIncarnation(t); inc.Commit != old.Commit || inc.Status != store.IncarnationReady {
		t.Fatalf("a refused upgrade changed the incarnation: %s %s (was %s)", inc.Commit, inc.Status, old.Commit)
	}

	start := time.Now()
	out = c.soulctl(t, "incarnation", "upgrade", opsInc, "--ref", "master", "--migrate", "migrate-conf", "--wait")
	t.Logf("upgrade with migration took %v:\n%s", since(start), out)
	inc := c.opsIncarnation(t)
	if inc.Commit != c2 || inc.Status != store.IncarnationReady || inc.State["conf_format"] != float64(2) || inc.State["version"] != "v2" {
		t.Errorf("after the upgrade with migration: commit %s (want %s) %s %v", inc.Commit, c2, inc.Status, inc.State)
	}
	for _, sid := range c.sids() {
		if got := strings.TrimSpace(c.sh(t, sid, "cat /etc/opsapp.format")); got != "2" {
			t.Errorf("the migration did not run on %s: %q", sid, got)
		}
	}
}
