package keeper_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// healthService has a Nagios-style check driven by a flag file in each
// soul's root, and a check targeted by where: to one host only.
var healthService = map[string]string{
	"service.yml":              "name: watched\n",
	"scenario/create/main.yml": "tasks:\n  - name: ping\n    module: core.test.ping\n",
	"health/alive.yml": `description: CRITICAL while the file "down" exists in the soul's root
module: core.exec.run
params:
  command: "if [ -e down ]; then echo 'ALIVE CRITICAL - down flag set | load=1.5;1;2'; exit 2; fi; echo 'ALIVE OK - ${ incarnation.name } | load=0.5;1;2'"
every: 1s
timeout: 1s
after_runs: true
`,
	"health/only-a.yml": `module: core.test.ping
every: 1s
where: soulprint.self.sid == "soul-a"
`,
	"health/nobody.yml": `module: core.test.ping
on: [no-such-coven]
`,
}

// TestHealthChecks (SPEC §14.1, issue 22) runs a keeper with three real
// soul processes: the souls run the incarnation's checks on their own
// schedule; the run record carries the after_runs health; a check going
// CRITICAL on one host shows in the API, in soulctl incarnation health, as
// an SSE transition and in the Prometheus counts within every + a few
// seconds, and OK again after; vital signs arrive per soul; a killed soul's
// checks go stale.
func TestHealthChecks(t *testing.T) {
	f := &fleet{t: t, ctx: context.Background(), dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(f.dir, "keeper")
	cfg.HeartbeatInterval = config.Duration(time.Second)
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	cfg.HealthStaleAfter = config.Duration(4 * time.Second)
	res, err := keeper.Init(f.ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, f.addr = serveKeeper(t, cfg, "keeper")
	f.fp, f.token = res.Fingerprint, res.Token.Token
	f.connect()
	repo := catalogtest.NewRepo(t)
	repo.Commit(healthService, "watched service")
	if _, err := f.c.RegisterService(f.ctx, apitypes.RegisterServiceRequest{Name: "watched", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	jt, err := f.c.CreateJoinToken(f.ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"fleet"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range fleetSIDs {
		if err := os.MkdirAll(f.root(sid), 0o755); err != nil {
			t.Fatal(err)
		}
		f.souls[sid] = testutil.StartProcess(t, "soul "+sid, soulBin, "run", "--keeper", "https://"+f.addr, "--sid", sid,
			"--data-dir", filepath.Join(f.dir, sid), "--root", f.root(sid), "--join-token", jt.Token,
			"--reconnect-min", "50ms", "--reconnect-max", "300ms", "--health-summary-interval", "1s", "--vitals-interval", "1s")
	}
	f.waitSouls(store.SoulConnected, fleetSIDs...)
	acc, err := f.c.CreateIncarnation(f.ctx, apitypes.CreateIncarnationRequest{Name: "w1", Service: "watched", Covens: []string{"fleet"}})
	if err != nil {
		t.Fatal(err)
	}
	run := f.awaitRun(acc.ApplyID, 30*time.Second)
	if run.Status != store.RunSucceeded {
		t.Fatalf("create: %s %s", run.Status, run.Error)
	}

	// after_runs: the run record gets each member's alive outcome.
	testutil.WaitFor(t, 20*time.Second, func() bool {
		r, err := f.c.GetRun(f.ctx, acc.ApplyID)
		if err != nil || len(r.Health) != 3 {
			return false
		}
		for _, h := range r.Health {
			if len(h.Outcomes) != 1 || h.Outcomes[0].Check != "alive" || h.Outcomes[0].Status != "OK" {
				t.Fatalf("health after the run: %+v", r.Health)
			}
		}
		return true
	}, "the health after the create run in its record")

	status := func(check, sid string) apitypes.HealthHost {
		h, err := f.c.IncarnationHealth(f.ctx, "w1")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range h.Checks {
			if c.Name != check {
				continue
			}
			for _, host := range c.Hosts {
				if host.SID == sid {
					return host
				}
			}
		}
		return apitypes.HealthHost{}
	}
	testutil.WaitFor(t, 15*time.Second, func() bool {
		for _, sid := range fleetSIDs {
			if status("alive", sid).Status != "OK" {
				return false
			}
		}
		return status("only-a", "soul-a").Status == "OK"
	}, "alive OK on every soul")
	h, err := f.c.IncarnationHealth(f.ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Checks) != 2 || h.Checks[1].Name != "only-a" || len(h.Checks[1].Hosts) != 1 {
		t.Errorf("only-a must run on soul-a only and nobody on no host: %+v", h.Checks)
	}
	if a := status("alive", "soul-b"); a.Message != "ALIVE OK - w1" || a.Perfdata["load"] != 0.5 {
		t.Errorf("alive on soul-b: %+v", a)
	}

	// Transitions arrive as Server-Sent Events.
	events := f.healthEvents("w1")
	start := time.Now()
	if err := os.WriteFile(filepath.Join(f.root("soul-b"), "down"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 8*time.Second, func() bool { return status("alive", "soul-b").Status == "CRITICAL" }, "soul-b CRITICAL")
	took := time.Since(start)
	t.Logf("CRITICAL in the API %s after the flag (every: 1s)", took.Round(10*time.Millisecond))
	if b := status("alive", "soul-b"); b.Message != "ALIVE CRITICAL - down flag set" || b.Perfdata["load"] != 1.5 {
		t.Errorf("critical soul-b: %+v", b)
	}
	select {
	case ev := <-events:
		if ev.SID != "soul-b" || ev.From != "OK" || ev.To != "CRITICAL" || ev.Check != "alive" {
			t.Errorf("event: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Error("no SSE health.transition event")
	}
	if m := f.metrics(); !strings.Contains(m, `soulstack_health_checks{check="alive",incarnation="w1",status="CRITICAL"} 1`) ||
		!strings.Contains(m, `soulstack_health_checks{check="alive",incarnation="w1",status="OK"} 2`) {
		t.Errorf("metrics lack the counts:\n%s", grepLines(m, "soulstack_health_checks"))
	}
	if page := f.uiPage("/ui/incarnations/w1"); !strings.Contains(page, `data-sid="soul-b" data-status="CRITICAL"`) || !strings.Contains(page, "ALIVE CRITICAL - down flag set") {
		t.Errorf("the incarnation page's health panel does not show soul-b CRITICAL:\n%s", page)
	}
	if page := f.uiPage("/ui/"); !strings.Contains(page, `id="health-overview"`) || !strings.Contains(page, "st-critical") {
		t.Errorf("the dashboard has no health overview with the CRITICAL count")
	}
	var out, errb bytes.Buffer
	g := &cli.Globals{Getenv: func(k string) string {
		return map[string]string{"SOULCTL_KEEPER": "http://" + f.addr, "SOULCTL_TOKEN": f.token, "SOULCTL_CONFIG": filepath.Join(f.dir, "none.yaml")}[k]
	}}
	if code := g.Run(f.ctx, []string{"incarnation", "health", "w1"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "soul-b") || !strings.Contains(out.String(), "CRITICAL") || !strings.Contains(out.String(), "OK 2, CRITICAL 1") {
		t.Errorf("soulctl incarnation health: exit %d\n%s%s", code, out.String(), errb.String())
	}

	if err := os.Remove(filepath.Join(f.root("soul-b"), "down")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 8*time.Second, func() bool { return status("alive", "soul-b").Status == "OK" }, "soul-b OK again")
	// Transitions are written in batches: the OK one follows shortly.
	testutil.WaitFor(t, 5*time.Second, func() bool {
		h, err = f.c.IncarnationHealth(f.ctx, "w1")
		return err == nil && len(h.Transitions) >= 2
	}, "the OK transition in the history")
	if h.Transitions[0].To != "OK" || h.Transitions[1].To != "CRITICAL" {
		t.Errorf("transitions: %+v", h.Transitions)
	}

	// Vital signs, per soul.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		v, err := f.c.SoulVitals(f.ctx, "soul-a")
		return err == nil && v.At != nil && v.Vitals["uptime_s"] != nil && v.Vitals["load1"] != nil && v.Vitals["mem_used_pct"] != nil
	}, "vital signs of soul-a")

	if page := f.uiPage("/ui/souls/soul-a"); !strings.Contains(page, `id="vitals-table"`) || !strings.Contains(page, "uptime_s") {
		t.Errorf("the soul page shows no vital signs")
	}

	// A soul that stops reporting goes stale.
	if err := f.souls["soul-c"].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.souls["soul-c"].Wait(10 * time.Second)
	testutil.WaitFor(t, 15*time.Second, func() bool { return status("alive", "soul-c").Status == "stale" }, "soul-c stale")
	if c := status("alive", "soul-c"); c.LastStatus != "OK" {
		t.Errorf("stale soul-c: %+v", c)
	}
}

// healthEvents subscribes to an incarnation's health transitions (SSE).
func (f *fleet) healthEvents(name string) <-chan apitypes.HealthEvent {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	f.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+f.addr+"/v1/incarnations/"+name+"/health/events", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("health events: %s", resp.Status)
	}
	ch := make(chan apitypes.HealthEvent, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev apitypes.HealthEvent
			if json.Unmarshal([]byte(data), &ev) == nil {
				ch <- ev
			}
		}
	}()
	return ch
}

// uiPage signs in to the UI with the admin token and returns a page.
func (f *fleet) uiPage(path string) string {
	f.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		f.t.Fatal(err)
	}
	hc := &http.Client{Jar: jar}
	resp, err := hc.PostForm("http://"+f.addr+"/ui/login", url.Values{"token": {f.token}})
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.Get("http://" + f.addr + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return string(b)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
