package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// pingEvery is the redis example's health/ping.yml every:.
const pingEvery = 10 * time.Second

// testHealth (SPEC §14.1, issue 22 done-when): the redis example's ping
// check, run by the soulstack-soul units on their own schedule, goes
// CRITICAL within every + a few seconds of Redis being stopped on one host
// — in the API, soulctl incarnation health, the UI and the metric — and OK
// again once it is started; left stopped, the Checker procedure
// redis_restart_if_critical, scheduled every minute, heals it by itself.
func (c *cluster) testHealth(t *testing.T) {
	all := c.sids()
	eventually(t, 2*pingEvery+10*time.Second, "ping OK on every host", func() error {
		return c.wantPing(t, all, "OK")
	})
	sid := c.replicas()[0]
	stop := func() {
		t.Helper()
		if _, errOut, err := c.host(t, sid).Exec(t.Context(), "systemctl stop redis-server"); err != nil {
			t.Fatalf("stopping redis-server on %s: %v %s", sid, err, errOut)
		}
	}
	start := time.Now()
	stop()
	eventually(t, pingEvery+10*time.Second, sid+" CRITICAL in the API", func() error { return c.wantPing(t, []string{sid}, "CRITICAL") })
	t.Logf("ping CRITICAL on %s in the API %v after redis-server stopped (every: %v)", sid, since(start), pingEvery)
	out := c.soulctl(t, "incarnation", "health", c.incName())
	if !strings.Contains(out, sid) || !strings.Contains(out, "CRITICAL") {
		t.Errorf("soulctl incarnation health does not show %s CRITICAL:\n%s", sid, out)
	}
	if page := c.uiPage(t, "/ui/incarnations/"+c.incName()); !strings.Contains(page, fmt.Sprintf(`data-sid="%s" data-status="CRITICAL"`, sid)) {
		t.Errorf("the UI health panel does not show %s CRITICAL", sid)
	}
	metric := fmt.Sprintf(`soulstack_health_checks{check="ping",incarnation=%q,status="CRITICAL"} 1`, c.incName())
	if m := c.keeperGet(t, "/metrics"); !strings.Contains(m, metric) {
		t.Errorf("metrics lack %s", metric)
	}

	if _, errOut, err := c.host(t, sid).Exec(t.Context(), "systemctl start redis-server"); err != nil {
		t.Fatalf("starting redis-server on %s: %v %s", sid, err, errOut)
	}
	eventually(t, pingEvery+10*time.Second, sid+" OK again", func() error { return c.wantPing(t, []string{sid}, "OK") })

	// Left stopped, the scheduled Checker procedure heals it.
	src, err := os.ReadFile("../../examples/procedures/redis_restart_if_critical.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.api.PutProcedure(ctx, "redis_restart_if_critical", string(src)); err != nil {
		t.Fatal(err)
	}
	sched, err := c.api.CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "redis_restart_if_critical",
		Vars: map[string]any{"incarnation": c.incName()}, Cron: "* * * * *"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.api.DeleteSchedule(context.WithoutCancel(ctx), sched.ID); err != nil {
			t.Errorf("deleting the schedule: %v", err)
		}
	}()
	c.resetStartLimits(t)
	start = time.Now()
	stop()
	eventually(t, pingEvery+10*time.Second, sid+" CRITICAL again", func() error { return c.wantPing(t, []string{sid}, "CRITICAL") })
	// The next minute's tick, three looks 10 s apart, the heal run, the
	// next ping: at most about two minutes.
	eventually(t, 150*time.Second, "the Checker to restart redis-server on "+sid, func() error {
		if out, _, err := c.host(t, sid).Exec(ctx, "systemctl is-active redis-server"); err != nil || strings.TrimSpace(out) != "active" {
			return fmt.Errorf("redis-server is %q", strings.TrimSpace(out))
		}
		return c.wantPing(t, []string{sid}, "OK")
	})
	t.Logf("the Checker restarted redis-server on %s %v after it was stopped", sid, since(start))
	runs, err := c.api.ListRuns(ctx, c.incName(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 || runs[0].Scenario != "heal" || runs[0].Status != store.RunSucceeded {
		t.Errorf("the newest run is not a succeeded heal: %+v", runs)
	}
}

// wantPing fails unless the ping check is status on every host of sids.
func (c *cluster) wantPing(t *testing.T, sids []string, status string) error {
	h, err := c.api.IncarnationHealth(t.Context(), c.incName())
	if err != nil {
		return err
	}
	got := map[string]string{}
	for _, ch := range h.Checks {
		if ch.Name == "ping" {
			for _, host := range ch.Hosts {
				got[host.SID] = host.Status + " (" + host.Message + ")"
			}
		}
	}
	for _, sid := range sids {
		if !strings.HasPrefix(got[sid], status+" ") {
			return fmt.Errorf("ping on %s is %q, want %s", sid, got[sid], status)
		}
	}
	return nil
}

// incName is the incarnation the cluster tests create.
func (c *cluster) incName() string { return incarnation }

// soulctl runs the soulctl binary against the Keeper and returns its
// output; a non-zero exit fails the test.
func (c *cluster) soulctl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), soulctlBin, args...)
	cmd.Env = append(os.Environ(), "SOULCTL_KEEPER=http://"+c.keeper.addr, "SOULCTL_TOKEN="+c.token, "SOULCTL_CONFIG="+c.logDir+"/soulctl.yaml")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("soulctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// keeperGet fetches a path of the Keeper without credentials (/metrics).
func (c *cluster) keeperGet(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + c.keeper.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// uiPage signs in to the UI with the admin token and returns a page.
func (c *cluster) uiPage(t *testing.T, path string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.PostForm("http://"+c.keeper.addr+"/ui/login", url.Values{"token": {c.token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.Get("http://" + c.keeper.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	return string(b)
}
