package keeper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// healingService restarts its "daemon" when its check is CRITICAL twice in
// a row, and pages when the restart run ends (SPEC §17, issue 33). The
// daemon's health is a flag file in each soul's root: "down" means dead;
// the restart scenario brings it back by removing the flag on the host
// the event named.
var healingService = map[string]string{
	"service.yml":              "name: healing\n",
	"scenario/create/main.yml": "tasks:\n  - name: ping\n    module: core.test.ping\n",
	"scenario/restart/main.yml": `input:
  host: {type: string, required: true}
tasks:
  - name: start the daemon again
    module: core.exec.run
    where: soulprint.self.sid == input.host
    params:
      command: "rm -f down"
`,
	"health/daemon.yml": `module: core.exec.run
params:
  command: "if [ -e down ]; then echo 'DAEMON CRITICAL - not running'; exit 2; fi; echo 'DAEMON OK'"
every: 1s
timeout: 1s
`,
	"rules/restart-daemon.yml": `description: restart the daemon when its check is CRITICAL twice in a row
on: health.changed
if: event.check == "daemon" && event.to == "CRITICAL" && event.streak == 2
do:
  run:
    scenario: restart
    input: {host: "${ event.sid }"}
cooldown: 10m
max_per_hour: 5
max_concurrent: 1
`,
	"rules/report.yml": `description: tell the receiver how the restart went
on: run.ended
if: event.rule != ""
do:
  notify:
    endpoint: receiver
    subject: "${ event.incarnation }: ${ event.scenario } ${ event.status }"
    message: "run ${ event.apply_id } started by ${ event.rule } ended ${ event.status }"
cooldown: 0s
max_per_hour: 20
max_concurrent: 5
`,
}

// TestSelfHealingLoop runs a keeper with three real soul processes and a
// real webhook receiver on loopback: a daemon dies on soul-b, its check
// turns CRITICAL, the rule fires once (the second CRITICAL), its run
// brings the daemon back, the check is OK again and the incident closes,
// and the receiver gets the HMAC-signed notification of the run's end.
func TestSelfHealingLoop(t *testing.T) {
	f := &fleet{t: t, ctx: context.Background(), dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(f.dir, "keeper")
	cfg.HeartbeatInterval = config.Duration(time.Second)
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(f.ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, f.addr = serveKeeper(t, cfg, "keeper")
	f.fp, f.token = res.Fingerprint, res.Token.Token
	f.connect()

	var mu sync.Mutex
	type hook struct {
		body      []byte
		sig, ts   string
		delivered string
	}
	var hooks []hook
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooks = append(hooks, hook{b, r.Header.Get(notify.HeaderSignature), r.Header.Get(notify.HeaderTimestamp), r.Header.Get(notify.HeaderDelivery)})
		mu.Unlock()
	}))
	defer rcv.Close()
	secret := "receiver-hmac-key"
	if _, err := f.c.PutEndpoint(f.ctx, "receiver", apitypes.PutEndpointRequest{Kind: "webhook", URL: rcv.URL, Secret: &secret}); err != nil {
		t.Fatal(err)
	}

	repo := catalogtest.NewRepo(t)
	repo.Commit(healingService, "self-healing service")
	if _, err := f.c.RegisterService(f.ctx, apitypes.RegisterServiceRequest{Name: "healing", Git: repo.Dir, Ref: "master"}); err != nil {
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
			"--reconnect-min", "50ms", "--reconnect-max", "300ms", "--health-summary-interval", "1s")
	}
	f.waitSouls(store.SoulConnected, fleetSIDs...)
	acc, err := f.c.CreateIncarnation(f.ctx, apitypes.CreateIncarnationRequest{Name: "h1", Service: "healing", Covens: []string{"fleet"}})
	if err != nil {
		t.Fatal(err)
	}
	if run := f.awaitRun(acc.ApplyID, 30*time.Second); run.Status != store.RunSucceeded {
		t.Fatalf("create: %s %s", run.Status, run.Error)
	}
	status := func(sid string) string {
		h, err := f.c.IncarnationHealth(f.ctx, "h1")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range h.Checks {
			for _, host := range c.Hosts {
				if c.Name == "daemon" && host.SID == sid {
					return host.Status
				}
			}
		}
		return ""
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return status("soul-b") == "OK" }, "daemon OK on soul-b")
	rules, err := f.c.ListRules(f.ctx)
	if err != nil || len(rules) != 2 || rules[1].ID != "h1/restart-daemon" || rules[1].MaxPerHour != 5 {
		t.Fatalf("rules: %+v %v", rules, err)
	}

	// The daemon dies.
	if err := os.WriteFile(filepath.Join(f.root("soul-b"), "down"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var fired apitypes.Firing
	testutil.WaitFor(t, 20*time.Second, func() bool {
		fs, err := f.c.RuleHistory(f.ctx, apiclient.RuleHistoryFilter{Rule: "h1/restart-daemon", Decision: store.FiringFired})
		if err != nil || len(fs) == 0 || fs[0].ApplyID == "" {
			return false
		}
		fired = fs[0]
		return true
	}, "the restart rule fired and started its run")
	if fired.Event["sid"] != "soul-b" || fired.Event["to"] != "CRITICAL" || fired.Event["streak"] != float64(2) || fired.Incident != "h1/daemon/soul-b" {
		t.Fatalf("firing: %+v", fired)
	}
	if run := f.awaitRun(fired.ApplyID, 30*time.Second); run.Status != store.RunSucceeded || run.Rule != "h1/restart-daemon" {
		t.Fatalf("restart run: %s %s, started by rule %q", run.Status, run.Error, run.Rule)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return status("soul-b") == "OK" }, "daemon OK again on soul-b")
	testutil.WaitFor(t, 10*time.Second, func() bool {
		fs, err := f.c.RuleHistory(f.ctx, apiclient.RuleHistoryFilter{Rule: "h1/restart-daemon", Decision: store.FiringResolved})
		return err == nil && len(fs) == 1 && fs[0].Incident == "h1/daemon/soul-b"
	}, "the incident closed")
	fs, err := f.c.RuleHistory(f.ctx, apiclient.RuleHistoryFilter{Rule: "h1/restart-daemon", Decision: store.FiringFired})
	if err != nil || len(fs) != 1 {
		t.Fatalf("the rule must fire exactly once: %+v %v", fs, err)
	}

	// The receiver got the signed notification of the run's end.
	testutil.WaitFor(t, 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hooks) > 0
	}, "the notification at the receiver")
	mu.Lock()
	h := hooks[0]
	mu.Unlock()
	if !notify.Verify(secret, h.ts, h.body, h.sig) {
		t.Fatalf("signature %q does not verify over %s", h.sig, h.body)
	}
	var payload map[string]any
	if err := json.Unmarshal(h.body, &payload); err != nil {
		t.Fatal(err)
	}
	if payload["rule"] != "h1/report" || payload["subject"] != "h1: restart succeeded" ||
		payload["message"] != "run "+fired.ApplyID+" started by h1/restart-daemon ended succeeded" {
		t.Fatalf("payload: %s", h.body)
	}
	if strings.Contains(string(h.body), secret) {
		t.Fatal("the notification carries the endpoint secret")
	}

	// The UI's rules page shows the decisions (and, to an admin, the dead
	// letters: none here).
	page := f.uiPage("/ui/rules")
	if !strings.Contains(page, `data-decision="fired"`) || !strings.Contains(page, fired.ApplyID) ||
		!strings.Contains(page, `data-decision="resolved"`) || !strings.Contains(page, `id="dead-letters"`) {
		t.Errorf("the rules page does not show the decisions:\n%s", page)
	}

	// soulctl rules history shows the decisions.
	var out, errb bytes.Buffer
	g := &cli.Globals{Getenv: func(k string) string {
		return map[string]string{"SOULCTL_KEEPER": "http://" + f.addr, "SOULCTL_TOKEN": f.token, "SOULCTL_CONFIG": filepath.Join(f.dir, "none.yaml")}[k]
	}}
	if code := g.Run(f.ctx, []string{"rules", "history", "h1/restart-daemon"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "fired") || !strings.Contains(out.String(), fired.ApplyID) || !strings.Contains(out.String(), "resolved") {
		t.Fatalf("soulctl rules history: %d\n%s%s", code, out.String(), errb.String())
	}
}
