package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// webIncarnation is the incarnation of examples/web; its members carry
// webCoven, the balancer also lb, the web servers web.
const (
	webIncarnation = "web-e2e"
	webCoven       = "webstack"
)

// TestWebService deploys examples/web (issue 15's example service) on a
// lab of systemd hosts, one balancer and three web servers, with real
// Debian packages (nginx, haproxy, openssh-server, cron from the lab's
// repository): create converges, create again changes nothing on any
// host, and deploy drains each wave's web server at haproxy (delegate:)
// while only that server is out of the pool.
func TestWebService(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	c := newCluster(t, lab.FlavourSystemd)
	c.registerService(t, "web")
	sids := c.sids()
	lb, webs := sids[0], sids[1:]
	for _, sid := range sids {
		covens := []string{coven, webCoven, "web"}
		if sid == lb {
			covens = []string{coven, webCoven, "lb"}
		}
		if _, err := c.api.SetSoulCovens(t.Context(), sid, covens); err != nil {
			t.Fatalf("covens of %s: %v", sid, err)
		}
	}
	runSteps(t, []step{
		{"create converges", func(t *testing.T) { c.testWebCreate(t, lb, webs) }},
		{"create again changes nothing", c.testWebCreateAgain},
		{"deploy in check mode touches nothing", func(t *testing.T) { c.testWebDeployCheck(t, lb, webs) }},
		{"deploy drains each wave at the balancer", func(t *testing.T) { c.testWebDeploy(t, lb, webs) }},
	}, c.resetStartLimits)
	t.Logf("the web service end-to-end run took %v", since(start))
}

// webRun starts scenario on the web incarnation (create creates it) and
// waits for its end.
func (c *cluster) webRun(t *testing.T, scenario string, input map[string]any) apitypes.RunDetail {
	t.Helper()
	start := time.Now()
	id := c.startWebRun(t, scenario, input)
	r := c.waitRun(t, id)
	logRun(t, r, since(start))
	return r
}

func (c *cluster) startWebRun(t *testing.T, scenario string, input map[string]any) string {
	t.Helper()
	ctx := t.Context()
	var acc apitypes.Accepted
	var err error
	if _, gerr := c.api.GetIncarnation(ctx, webIncarnation); apiclient.IsCode(gerr, domain.CodeNotFound) {
		acc, err = c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{
			Name: webIncarnation, Service: "web", Covens: []string{webCoven}, Input: input})
	} else {
		acc, err = c.api.StartRun(ctx, webIncarnation, apitypes.StartRunRequest{Scenario: scenario, Input: input})
	}
	if err != nil {
		t.Fatalf("starting %s: %v", scenario, err)
	}
	return acc.ApplyID
}

// sh runs script in host sid and returns its standard output.
func (c *cluster) sh(t *testing.T, sid, script string) string {
	t.Helper()
	out, stderr, err := c.host(t, sid).Exec(t.Context(), script)
	if err != nil {
		t.Fatalf("%s on %s: %v: %s", script, sid, err, stderr)
	}
	return out
}

// get asks host sid for path of virtual host vhost at addr:80 over plain
// HTTP/1.0 and returns the response body.
func (c *cluster) get(t *testing.T, sid, addr, vhost, path string) string {
	t.Helper()
	out := c.sh(t, sid, fmt.Sprintf(`printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' | nc -N -w 5 %s 80`, path, vhost, addr))
	head, body, _ := strings.Cut(out, "\r\n\r\n")
	if !strings.HasPrefix(head, "HTTP/1.1 200") {
		t.Fatalf("GET http://%s%s (Host %s) from %s: %q", addr, path, vhost, sid, head)
	}
	return body
}

func (c *cluster) testWebCreate(t *testing.T, lb string, webs []string) {
	r := c.webRun(t, "create", nil)
	requireOutcome(t, r, store.RunSucceeded)
	assertEqual(t, "hosts that installed nginx", hostsOf(task(r, "Install nginx"), changed), webs)
	assertEqual(t, "hosts that installed haproxy", hostsOf(task(r, "Install haproxy"), changed), []string{lb})
	assertEqual(t, "hosts whose sshd was hardened", hostsOf(task(r, "Harden sshd"), changed), c.sids())
	assertEqual(t, "hosts whose health pages service.site_health wrote", hostsOf(task(r, "Health pages"), changed), webs)

	// Both virtual hosts answer on every web server, and through haproxy
	// on the balancer (round robin over the three).
	seen := map[string]bool{}
	for _, sid := range webs {
		for _, site := range []string{"alpha", "beta"} {
			body := c.get(t, sid, "127.0.0.1", site+".example.test", "/")
			if want := fmt.Sprintf("Hello from %s on %s\n", site, sid); body != want {
				t.Errorf("%s on %s: %q, want %q", site, sid, body, want)
			}
			// The page the repository's custom module (service.site_health) wrote.
			if body := c.get(t, sid, "127.0.0.1", site+".example.test", "/healthz"); body != "ok "+site+"\n" {
				t.Errorf("%s/healthz on %s: %q", site, sid, body)
			}
		}
	}
	for range 2 * len(webs) {
		body := c.get(t, lb, "127.0.0.1", "beta.example.test", "/")
		host, ok := strings.CutPrefix(strings.TrimSpace(body), "Hello from beta on ")
		if !ok {
			t.Fatalf("beta through haproxy: %q", body)
		}
		seen[host] = true
	}
	if len(seen) != len(webs) {
		t.Errorf("haproxy sent requests to %v, want all of %v", seen, webs)
	}
	for _, sid := range c.sids() {
		eff := c.sh(t, sid, "sshd -T | grep -E '^(passwordauthentication|x11forwarding|maxauthtries|permitrootlogin) '")
		for _, want := range []string{"passwordauthentication no", "x11forwarding no", "maxauthtries 3", "permitrootlogin without-password"} {
			if !strings.Contains(eff, want+"\n") {
				t.Errorf("sshd -T on %s lacks %q:\n%s", sid, want, eff)
			}
		}
		if got := strings.TrimSpace(c.sh(t, sid, "systemctl is-active ssh cron | sort -u")); got != "active" {
			t.Errorf("ssh and cron on %s: %q", sid, got)
		}
		cron := c.sh(t, sid, "cat /etc/cron.d/web-du")
		if !strings.Contains(cron, "*/10 * * * * root du -s /var/www") {
			t.Errorf("/etc/cron.d/web-du on %s:\n%s", sid, cron)
		}
		src := c.sh(t, sid, "cat /etc/apt/sources.list.d/soulstack-web.sources")
		if !strings.Contains(src, "URIs: file:/srv/lab-repo") {
			t.Errorf("the repository on %s:\n%s", sid, src)
		}
	}
	inc, err := c.api.GetIncarnation(t.Context(), webIncarnation)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "committed backends", fmt.Sprint(inc.State["backends"]), fmt.Sprint(webs))
}

// testWebCreateAgain: the second create reports no change on any host.
func (c *cluster) testWebCreateAgain(t *testing.T) {
	r := c.webRun(t, "create", nil)
	requireOutcome(t, r, store.RunSucceeded)
	n := 0
	for _, tk := range r.Tasks {
		for _, h := range tk.Hosts {
			n++
			if h.Changed || (h.Status != string(domain.StatusOK) && h.Status != string(domain.StatusSkipped)) {
				t.Errorf("second create: %q on %s is %s (changed %v): %s", tk.Name, h.SID, h.Status, h.Changed, h.Msg)
			}
		}
	}
	if n < 40 {
		t.Errorf("second create has %d results, want every task on its hosts", n)
	}
}

// serverStates reads haproxy's show stat through its admin socket on the
// balancer: the status of every server of backend web.
func (c *cluster) serverStates(t *testing.T, lb string) map[string]string {
	t.Helper()
	out := c.sh(t, lb, "echo 'show stat' | nc -U -N /run/haproxy/admin.sock")
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) > 17 && f[0] == "web" && f[1] != "BACKEND" {
			m[f[1]] = f[17]
		}
	}
	return m
}

// testWebDeploy runs deploy with its gate: each wave waits, drained, for
// a file on its host. While it waits, the test reads haproxy's show stat:
// that wave's server, and only it, is DRAIN, and its nginx was restarted.
func (c *cluster) testWebDeploy(t *testing.T, lb string, webs []string) {
	before := map[string]int{}
	for _, sid := range webs {
		before[sid] = c.mainPID(t, sid, "nginx")
	}
	if st := c.serverStates(t, lb); len(st) != len(webs) {
		t.Fatalf("haproxy servers before deploy: %v", st)
	}
	id := c.startWebRun(t, "deploy", map[string]any{"gate": true})
	for _, sid := range webs {
		var st map[string]string
		eventually(t, 60*time.Second, sid+" drained at the balancer", func() error {
			st = c.serverStates(t, lb)
			if st[sid] != "DRAIN" {
				return fmt.Errorf("haproxy servers: %v", st)
			}
			return nil
		})
		for _, other := range webs {
			if other != sid && st[other] != "UP" {
				t.Errorf("while %s is drained, %s is %s (want UP): only the wave's host may be out", sid, other, st[other])
			}
		}
		eventually(t, 30*time.Second, "nginx restarted on "+sid, func() error {
			if pid := c.mainPID(t, sid, "nginx"); pid == before[sid] || pid == 0 {
				return fmt.Errorf("nginx MainPID %d, before deploy %d", pid, before[sid])
			}
			return nil
		})
		for _, other := range webs {
			if other > sid && c.mainPID(t, other, "nginx") != before[other] {
				t.Errorf("nginx on %s restarted while wave %s was drained", other, sid)
			}
		}
		t.Logf("wave %s: haproxy says %v", sid, st)
		c.sh(t, sid, "touch /run/web-deploy-gate")
	}
	r := c.waitRun(t, id)
	requireOutcome(t, r, store.RunSucceeded)
	drain := task(r, "Drain at the balancer")
	var want [][]string
	for _, sid := range webs {
		want = append(want, []string{sid})
	}
	assertEqual(t, "drain waves", waves(drain), want)
	for _, h := range drain.Hosts {
		if fmt.Sprint(h.Data["delegated_to"]) != "["+lb+"]" {
			t.Errorf("drain of %s: delegated_to %v, want [%s]", h.SID, h.Data["delegated_to"], lb)
		}
	}
	st := c.serverStates(t, lb)
	for _, sid := range webs {
		if st[sid] != "UP" {
			t.Errorf("after deploy haproxy has %s %s", sid, st[sid])
		}
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range st {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, webs) {
		t.Errorf("haproxy servers %v, want %v", got, webs)
	}
}

// testWebDeployCheck runs deploy in check mode: the delegated commands are
// reported as would-run (unknown) on each wave host's row, delegated to
// the balancer, and nothing is drained or restarted.
func (c *cluster) testWebDeployCheck(t *testing.T, lb string, webs []string) {
	before := map[string]int{}
	for _, sid := range webs {
		before[sid] = c.mainPID(t, sid, "nginx")
	}
	ctx := t.Context()
	acc, err := c.api.StartRun(ctx, webIncarnation, apitypes.StartRunRequest{Scenario: "deploy", Check: true})
	if err != nil {
		t.Fatal(err)
	}
	r := c.waitRun(t, acc.ApplyID)
	requireOutcome(t, r, store.RunSucceeded)
	drain := task(r, "Drain at the balancer")
	assertEqual(t, "check-mode drain rows", hostsOf(drain, status(domain.StatusUnknown)), webs)
	for _, h := range drain.Hosts {
		if fmt.Sprint(h.Data["delegated_to"]) != "["+lb+"]" {
			t.Errorf("check-mode drain of %s: delegated_to %v", h.SID, h.Data["delegated_to"])
		}
	}
	for sid, st := range c.serverStates(t, lb) {
		if st != "UP" {
			t.Errorf("after a check-mode deploy haproxy has %s %s", sid, st)
		}
	}
	for _, sid := range webs {
		if pid := c.mainPID(t, sid, "nginx"); pid != before[sid] {
			t.Errorf("check-mode deploy restarted nginx on %s (MainPID %d → %d)", sid, before[sid], pid)
		}
	}
}
