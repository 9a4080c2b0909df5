package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/store"
)

// rebootService reboots its hosts from a task, between a task before and
// a task after that read the host's boot id.
var rebootService = map[string]string{
	"service.yml":           "name: reboot-demo\ndescription: reboots its hosts mid-run\n",
	"essence/_default.yaml": "{}\n",
	"scenario/create/main.yml": `input:
  timeout:
    type: string
    default: "90s"
tasks:
  - name: Boot id before
    module: core.exec.run
    params: {command: "cat /proc/sys/kernel/random/boot_id"}
    changed_when: false
  - name: Reboot
    module: core.system.rebooted
    params:
      reason: "e2e: kernel update"
      timeout: "${ input.timeout }"
  - name: Boot id after
    module: core.exec.run
    params: {command: "cat /proc/sys/kernel/random/boot_id"}
    changed_when: false
`,
}

// testRebootedFromTask runs core.system.rebooted on every host: each host
// reboots (systemd, asked from inside, booted again by the lab), the task
// ends only once its soul is back with a new boot id, and the run goes on
// with the next task, which runs in the new boot. Then a host whose soul
// does not come back (disabled before the reboot) fails the task after
// its timeout, and the run fails.
func (c *cluster) testRebootedFromTask(t *testing.T) {
	ctx := t.Context()
	repo := catalogtest.NewRepo(t)
	repo.Commit(rebootService, "reboot-demo")
	if _, err := c.api.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "reboot-demo", Git: "file://" + repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	const name = "reboot-demo-prod"
	boots, ids := map[string]int{}, map[string]string{}
	for _, h := range c.lab.Hosts() {
		boots[h.Name()] = h.Boots()
		ids[h.Name()], _ = h.BootID()
	}
	start := time.Now()
	acc, err := c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: name, Service: "reboot-demo", Covens: []string{coven}})
	if err != nil {
		t.Fatal(err)
	}
	r := c.waitRun(t, acc.ApplyID)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunSucceeded)
	for _, sid := range c.sids() {
		h := c.host(t, sid)
		if h.Boots() <= boots[sid] {
			t.Errorf("%s did not reboot", sid)
		}
		now, _ := h.BootID()
		before, _ := hostResult(task(r, "Boot id before"), sid)
		reboot, _ := hostResult(task(r, "Reboot"), sid)
		after, _ := hostResult(task(r, "Boot id after"), sid)
		if strings.TrimSpace(before.Stdout) != ids[sid] || reboot.Data["previous_boot_id"] != ids[sid] {
			t.Errorf("%s: boot id before %q, previous_boot_id %v, want %s", sid, before.Stdout, reboot.Data["previous_boot_id"], ids[sid])
		}
		if now == ids[sid] || reboot.Data["boot_id"] != now || strings.TrimSpace(after.Stdout) != now {
			t.Errorf("%s: boot id now %s; the reboot task reported %v and the task after it read %q", sid, now, reboot.Data["boot_id"], after.Stdout)
		}
		if !reboot.Changed || !after.StartedAt.After(reboot.FinishedAt.Add(-time.Millisecond)) {
			t.Errorf("%s: reboot %+v, the next task started at %v", sid, reboot, after.StartedAt)
		}
	}
	t.Logf("4 hosts rebooted from a task and the run went on in %v", since(start))
	c.waitSouls(t, store.SoulConnected, c.sids()...)

	// A host whose soul does not come back fails the task after timeout.
	victim := c.replicas()[0]
	h := c.host(t, victim)
	if _, _, err := h.Exec(ctx, "systemctl disable "+soulUnit); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	again, err := c.api.StartRun(ctx, name, apitypes.StartRunRequest{Scenario: "create", Input: map[string]any{"timeout": "8s"}})
	if err != nil {
		t.Fatal(err)
	}
	r = c.waitRun(t, again.ApplyID)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunFailed)
	res, _ := hostResult(task(r, "Reboot"), victim)
	if !strings.Contains(res.Msg, "did not come back") || !strings.Contains(res.Msg, "8s") {
		t.Errorf("the reboot of %s: %s %q, want it failed after the 8s timeout", victim, res.Status, res.Msg)
	}
	assertEqual(t, "hosts that ran the task after the reboot", hostsOf(task(r, "Boot id after"), ran), []string(nil))
	if _, _, err := h.Exec(ctx, "systemctl enable --now "+soulUnit); err != nil {
		t.Fatal(err)
	}
	c.waitSouls(t, store.SoulConnected, victim)
	if _, err := c.api.UnlockIncarnation(ctx, name, "e2e: the soul is enabled again"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "redis on every host after the reboots", func() error {
		for _, sid := range c.sids() {
			if out, _, err := c.host(t, sid).Exec(ctx, "redis-cli ping"); err != nil || strings.TrimSpace(out) != "PONG" {
				return fmt.Errorf("%s: redis-cli ping %q %v", sid, out, err)
			}
		}
		return nil
	})
}
