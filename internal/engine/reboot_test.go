package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// rebootScenario reboots every host, then pings it.
var rebootScenario = map[string]string{"scenario/reboot/main.yml": `
tasks:
  - name: reboot
    module: core.system.rebooted
    params: {reason: test, timeout: 2s}
  - name: after
    module: core.test.ping
`}

// The soul answers core.system.rebooted with its boot id before the
// reboot; the task ends only when the soul's soulprint shows another boot
// id (it comes back connected with a new one), and the next task runs
// after that.
func TestRebootWaitsForANewBootID(t *testing.T) {
	svc := loadService(t, rebootScenario)
	w := newWorld(t, svc, "reboot", `
hosts: [{sid: a, covens: [prod]}]
stubs:
  - module: core.system.rebooted
    result: {changed: true, data: {previous_boot_id: boot-1}}
expect: {outcome: succeeded}
`)
	id := w.start()
	time.Sleep(600 * time.Millisecond)
	if rows := w.results(id); len(rowsOf(rows, "1")) != 0 {
		t.Fatalf("the task after the reboot ran before the host was back: %+v", rows)
	}
	soul, err := w.Store.GetSoul(w.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	sp := map[string]any{"boot_id": "boot-2"}
	for k, v := range soul.Soulprint {
		if k != "boot_id" {
			sp[k] = v
		}
	}
	if err := w.Store.UpdateSoulprint(w.ctx, "a", sp, time.Now()); err != nil {
		t.Fatal(err)
	}
	run := w.wait(id)
	if run.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	rows := w.results(id)
	reboot := rowsOf(rows, "0")["a"]
	if !strings.Contains(reboot.Msg, "boot-2") || len(rowsOf(rows, "1")) != 1 {
		t.Errorf("reboot %+v; after %+v", reboot, rowsOf(rows, "1"))
	}
}

// A host that does not come back with a new boot id within the timeout
// fails the task, and the run.
func TestRebootTimesOut(t *testing.T) {
	svc := loadService(t, rebootScenario)
	w := newWorld(t, svc, "reboot", `
hosts: [{sid: a, covens: [prod]}]
stubs:
  - module: core.system.rebooted
    result: {changed: true, data: {previous_boot_id: boot-1}}
expect: {outcome: failed}
`)
	start := time.Now()
	run := w.wait(w.start())
	if run.Status != store.RunFailed {
		t.Fatalf("run %s, want failed", run.Status)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("failed after %v, before the 2s timeout", took)
	}
	rows := w.results(run.ID)
	if r := rowsOf(rows, "0")["a"]; !strings.Contains(r.Msg, "did not come back") || len(rowsOf(rows, "1")) != 0 {
		t.Errorf("reboot %+v; after %+v", r, rowsOf(rows, "1"))
	}
}
