package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// slowDpkg makes every dpkg run on a host pause in its pre-invoke hook
// (dpkg itself running, holding its lock) and leave a mark, so that the
// test can restart the soul while dpkg runs.
const slowDpkg = `pre-invoke=/bin/sh -c 'touch /run/e2e-dpkg-running; sleep 3'` + "\n"

// testFirstServiceSoulRestarted walks the first-service guide (seed 002)
// with a fault: while one host's soul runs apt-get install htop, dpkg in
// the middle of it, the soul is restarted with `systemctl restart soulstack-soul`.
// The packaged unit's KillMode=process and the soul leaving package
// managers alone mean dpkg is not killed: htop ends up installed and
// configured. The soul's session ended before it answered, so the host is
// unreachable in the run, which fails without committing. After the unlock
// the next run converges (htop is already there) and commits, and a run
// after it changes nothing.
func (c *cluster) testFirstServiceSoulRestarted(t *testing.T) {
	ctx := t.Context()
	c.registerService(t, "my-service")
	const name = "my-service-prod"
	banner := "Managed by Soul Stack — prod"
	victim := c.replicas()[0]
	h := c.host(t, victim)
	if err := h.WriteFile("/etc/dpkg/dpkg.cfg.d/e2e-slow", []byte(slowDpkg), 0o644); err != nil {
		t.Fatal(err)
	}
	soulPID := c.mainPID(t, victim, soulUnit)

	start := time.Now()
	acc, err := c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{
		Name: name, Service: "my-service", Covens: []string{coven},
		Input: map[string]any{"banner_text": banner},
	})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	var dpkg string
	eventually(t, 60*time.Second, "dpkg to run on "+victim, func() error {
		out, _, err := h.Exec(ctx, "test -e /run/e2e-dpkg-running && pgrep -x dpkg")
		if err != nil {
			return fmt.Errorf("dpkg not running yet: %v", err)
		}
		dpkg = strings.Fields(out)[0]
		return nil
	})
	if _, _, err := h.Exec(ctx, "systemctl restart "+soulUnit); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted the soul of %s while dpkg (pid %s) ran", victim, dpkg)
	if now := c.mainPID(t, victim, soulUnit); now == soulPID || now == 0 {
		t.Errorf("%s MainPID %d before the restart, %d after", soulUnit, soulPID, now)
	}

	r := c.waitRun(t, acc.ApplyID)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunFailed)
	// The soul's session ended before it answered, so the run stopped
	// waiting at once; the soul, stopping, reported the install as
	// interrupted (apt-get left running), which the keeper records late.
	eventually(t, 30*time.Second, "the interrupted install of "+victim+" in the run's record", func() error {
		var err error
		if r, err = c.api.GetRun(ctx, acc.ApplyID); err != nil {
			return err
		}
		res, _ := hostResult(task(r, "Install htop package"), victim)
		if !strings.Contains(res.Msg, "interrupted") || !strings.Contains(res.Msg, "left running") {
			return fmt.Errorf("the install on %s: %s %q", victim, res.Status, res.Msg)
		}
		if res.Status == string(domain.StatusOK) || res.Status == string(domain.StatusChanged) {
			return fmt.Errorf("the interrupted install on %s is %s", victim, res.Status)
		}
		return nil
	})
	requireOutcome(t, r, store.RunFailed)
	inc, err := c.api.GetIncarnation(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "status", inc.Status, store.IncarnationErrorLocked)
	if hist, err := c.api.IncarnationHistory(ctx, name, 0); err != nil || len(hist) != 0 {
		t.Errorf("history: %d snapshots (%v) after the failed run, want none", len(hist), err)
	}

	// dpkg was not killed: it finishes by itself, htop installed and
	// configured, nothing left half done.
	eventually(t, 60*time.Second, "dpkg (pid "+dpkg+") on "+victim+" to finish", func() error {
		if _, _, err := h.Exec(ctx, "kill -0 "+dpkg); err == nil {
			return fmt.Errorf("dpkg %s still running", dpkg)
		}
		if _, _, err := h.Exec(ctx, "pgrep -x apt-get || pgrep -x dpkg"); err == nil {
			return fmt.Errorf("apt-get or dpkg still running")
		}
		return nil
	})
	out, _, err := h.Exec(ctx, "dpkg-query -W -f '${Status}' htop; echo; dpkg --audit; which htop")
	if err != nil || out != "install ok installed\n/usr/bin/htop\n" {
		t.Errorf("after the restart on %s: %q (%v), want htop installed and configured, dpkg --audit clean", victim, out, err)
	}
	if err := h.WriteFile("/etc/dpkg/dpkg.cfg.d/e2e-slow", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitSouls(t, store.SoulConnected, victim)

	if _, err := c.api.UnlockIncarnation(ctx, name, "e2e: the soul was restarted mid-install"); err != nil {
		t.Fatal(err)
	}
	for i, wantChanged := range []bool{true, false} {
		start = time.Now()
		again, err := c.api.StartRun(ctx, name, apitypes.StartRunRequest{Scenario: "create", Input: map[string]any{"banner_text": banner}})
		if err != nil {
			t.Fatal(err)
		}
		r = c.waitRun(t, again.ApplyID)
		logRun(t, r, since(start))
		requireOutcome(t, r, store.RunSucceeded)
		assertEqual(t, "run "+strconv.Itoa(i+2)+": hosts that installed htop", hostsOf(task(r, "Install htop package"), changed), []string(nil))
		// The failed run wrote the banner where the install had succeeded;
		// the next one writes it on the victim, the one after changes
		// nothing.
		motd := hostsOf(task(r, "Write managed banner to motd"), changed)
		if want := map[bool][]string{true: {victim}, false: nil}[wantChanged]; !slicesEqual(motd, want) {
			t.Errorf("run %d: hosts whose motd changed: %v, want %v", i+2, motd, want)
		}
	}
	for _, sid := range c.sids() {
		out, stderr, err := c.host(t, sid).Exec(ctx, "which htop && cat /etc/motd")
		if err != nil {
			t.Fatalf("%s: which htop && cat /etc/motd: %v: %s", sid, err, stderr)
		}
		if want := "/usr/bin/htop\n" + banner + "\n"; out != want {
			t.Errorf("%s printed %q, want %q", sid, out, want)
		}
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}
