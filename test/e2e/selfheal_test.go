package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/store"
)

// receiver is a webhook receiver the test runs on loopback (the keeper is
// a process on the machine side).
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  [][]byte
	sigs []bool
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, b)
		r.sigs = append(r.sigs, notify.Verify(secret, req.Header.Get(notify.HeaderTimestamp), b, req.Header.Get(notify.HeaderSignature)))
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// TestSelfHealing is issue 33's loop on systemd lab hosts with
// examples/self-healing: the daemon is killed on one host, its check
// turns CRITICAL, the restart rule fires once (on the second CRITICAL),
// its run restarts the unit, the check is OK again and the incident
// closes, and the team's webhook receiver gets the signed notification;
// the pager's receiver gets nothing (the restart helped). Then the daemon
// of the other host is kept broken (its unit cannot start any more) and
// killed: the restart rule fires once for that host, its run fails, and
// the page rule's webhook reaches the pager exactly once, signed and with
// no secret in it, while the check stays CRITICAL.
func TestSelfHealing(t *testing.T) {
	requireRoot(t)
	c := newClusterOf(t, lab.FlavourSystemd, "e2e-heal", 2, []string{"hello"})
	ctx := t.Context()
	team, pager := newReceiver(t, "team-key"), newReceiver(t, "pager-key")
	for name, r := range map[string]*receiver{"team": team, "pager": pager} {
		secret := name + "-key"
		if _, err := c.api.PutEndpoint(ctx, name, apitypes.PutEndpointRequest{Kind: "webhook", URL: r.srv.URL, Secret: &secret}); err != nil {
			t.Fatalf("endpoint %s: %v", name, err)
		}
	}
	c.registerService(t, "self-healing")
	acc, err := c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "heal", Service: "self-healing", Covens: []string{coven}})
	if err != nil {
		t.Fatal(err)
	}
	requireOutcome(t, c.waitRun(t, acc.ApplyID), store.RunSucceeded)
	daemon := func(sid string) string {
		h, err := c.api.IncarnationHealth(ctx, "heal")
		if err != nil {
			return ""
		}
		for _, ch := range h.Checks {
			for _, host := range ch.Hosts {
				if ch.Name == "daemon" && host.SID == sid {
					return host.Status
				}
			}
		}
		return ""
	}
	sid := c.sids()[1]
	eventually(t, 30*time.Second, "daemon OK on every host", func() error {
		for _, s := range c.sids() {
			if st := daemon(s); st != "OK" {
				return fmt.Errorf("%s: %q", s, st)
			}
		}
		return nil
	})

	start := time.Now()
	c.sh(t, sid, "systemctl kill --signal=KILL healing-daemon")
	var fired apitypes.Firing
	eventually(t, 60*time.Second, "the restart rule fired", func() error {
		fs, err := c.api.RuleHistory(ctx, apiclient.RuleHistoryFilter{Rule: "heal/restart-daemon", Decision: store.FiringFired})
		if err != nil || len(fs) == 0 || fs[0].ApplyID == "" {
			return fmt.Errorf("no firing yet (%v)", err)
		}
		fired = fs[0]
		return nil
	})
	t.Logf("the rule fired %v after the daemon was killed", since(start))
	if fired.Event["sid"] != sid || fired.Event["streak"] != float64(2) {
		t.Errorf("firing: %+v", fired)
	}
	run := c.waitRun(t, fired.ApplyID)
	requireOutcome(t, run, store.RunSucceeded)
	eventually(t, 30*time.Second, sid+" daemon OK again", func() error {
		if st := daemon(sid); st != "OK" {
			return fmt.Errorf("%q", st)
		}
		return nil
	})
	if out := c.sh(t, sid, "systemctl is-active healing-daemon"); out != "active\n" {
		t.Errorf("healing-daemon on %s: %q", sid, out)
	}
	eventually(t, 30*time.Second, "the incident closed", func() error {
		fs, err := c.api.RuleHistory(ctx, apiclient.RuleHistoryFilter{Rule: "heal/restart-daemon", Decision: store.FiringResolved})
		if err != nil || len(fs) != 1 {
			return fmt.Errorf("resolved: %d (%v)", len(fs), err)
		}
		return nil
	})
	if fs, _ := c.api.RuleHistory(ctx, apiclient.RuleHistoryFilter{Rule: "heal/restart-daemon", Decision: store.FiringFired}); len(fs) != 1 {
		t.Errorf("the rule fired %d times, want once", len(fs))
	}
	eventually(t, 30*time.Second, "the team's notification", func() error {
		if team.count() == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	team.mu.Lock()
	body, signed := team.got[0], team.sigs[0]
	team.mu.Unlock()
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil || !signed || p["rule"] != "heal/healed" || p["subject"] != "heal: daemon restarted" {
		t.Errorf("team notification (signed %v): %s", signed, body)
	}
	if n := pager.count(); n != 0 {
		t.Errorf("the pager got %d notifications although the restart helped", n)
	}
	t.Logf("self-healing loop closed %v after the kill", since(start))

	// The restart does not help: the unit's start fails from now on.
	broken := c.sids()[0]
	c.sh(t, broken, "mkdir -p /etc/systemd/system/healing-daemon.service.d && "+
		"printf '[Service]\\nExecStartPre=/bin/false\\n' >/etc/systemd/system/healing-daemon.service.d/broken.conf && "+
		"systemctl daemon-reload && systemctl kill --signal=KILL healing-daemon")
	start = time.Now()
	var failed apitypes.Firing
	eventually(t, 60*time.Second, "the restart rule fired for "+broken, func() error {
		fs, err := c.api.RuleHistory(ctx, apiclient.RuleHistoryFilter{Rule: "heal/restart-daemon", Decision: store.FiringFired})
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.Event["sid"] == broken && f.ApplyID != "" {
				failed = f
				return nil
			}
		}
		return fmt.Errorf("%d firings, none for %s yet", len(fs), broken)
	})
	if r := c.waitRun(t, failed.ApplyID); r.Status == store.RunSucceeded {
		t.Fatalf("the restart run of the broken daemon succeeded:\n%s", describe(r))
	} else {
		t.Logf("the restart run ended %s (%s)", r.Status, r.Error)
	}
	eventually(t, 30*time.Second, "the page", func() error {
		if pager.count() == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	t.Logf("paged %v after the second kill", since(start))
	pager.mu.Lock()
	body, signed = pager.got[0], pager.sigs[0]
	pager.mu.Unlock()
	p = nil
	if err := json.Unmarshal(body, &p); err != nil || !signed || p["rule"] != "heal/page" ||
		p["subject"] != "heal: restarting the daemon did not help" {
		t.Errorf("page (signed %v): %s", signed, body)
	}
	if ev, _ := p["event"].(map[string]any); ev["apply_id"] != failed.ApplyID {
		t.Errorf("the page is about run %v, want %s: %s", ev["apply_id"], failed.ApplyID, body)
	}
	for _, secret := range []string{"pager-key", "team-key"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("the page carries the endpoint secret %q: %s", secret, body)
		}
	}
	// The daemon stays down and its check CRITICAL for several more
	// periods: still one page, one restart of that host, no team message.
	time.Sleep(8 * time.Second)
	if st := daemon(broken); st != "CRITICAL" {
		t.Errorf("%s daemon check %q, want CRITICAL (kept broken)", broken, st)
	}
	if out := c.sh(t, broken, "systemctl is-active healing-daemon || true"); out == "active\n" {
		t.Errorf("healing-daemon on %s is active although its start fails", broken)
	}
	if n := pager.count(); n != 1 {
		t.Errorf("the pager got %d pages, want 1", n)
	}
	if n := team.count(); n != 1 {
		t.Errorf("the team got %d notifications, want 1 (the failed restart healed nothing)", n)
	}
	if fs, _ := c.api.RuleHistory(ctx, apiclient.RuleHistoryFilter{Rule: "heal/restart-daemon", Decision: store.FiringFired}); len(fs) != 2 {
		t.Errorf("the restart rule fired %d times, want twice (once per host)", len(fs))
	}
	if fs, _ := c.api.RuleHistory(ctx, apiclient.RuleHistoryFilter{Rule: "heal/page", Decision: store.FiringFired}); len(fs) != 1 {
		t.Errorf("the page rule fired %d times, want once", len(fs))
	}
}
