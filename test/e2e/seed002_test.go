package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// testFirstService walks the first-service guide (seed 002) on the lab's
// real hosts: examples/my-service is registered, an incarnation is created
// on the hosts' coven with the guide's input, it becomes ready with the
// banner committed, and on every host `which htop && cat /etc/motd` prints
// what the guide says; re-running create changes nothing.
func (c *cluster) testFirstService(t *testing.T) {
	ctx := t.Context()
	c.registerService(t, "my-service")
	const name = "my-service-prod"
	banner := "Managed by Soul Stack — prod"
	start := time.Now()
	acc, err := c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{
		Name: name, Service: "my-service", Covens: []string{coven},
		Input: map[string]any{"banner_text": banner},
	})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	r := c.waitRun(t, acc.ApplyID)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunSucceeded)
	assertEqual(t, "hosts that installed htop", hostsOf(task(r, "Install htop package"), changed), c.sids())

	inc, err := c.api.GetIncarnation(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "status", inc.Status, store.IncarnationReady)
	assertEqual(t, "state", inc.State, map[string]any{"banner": banner})
	hist, err := c.api.IncarnationHistory(ctx, name, 0)
	if err != nil || len(hist) != 1 {
		t.Fatalf("history: %d snapshots, %v; want 1", len(hist), err)
	}

	for _, sid := range c.sids() {
		out, stderr, err := c.host(t, sid).Exec(ctx, "which htop && cat /etc/motd")
		if err != nil {
			t.Fatalf("%s: which htop && cat /etc/motd: %v: %s", sid, err, stderr)
		}
		want := "/usr/bin/htop\n" + banner + "\n"
		if out != want {
			t.Errorf("%s printed %q, want %q", sid, out, want)
		}
	}

	start = time.Now()
	again, err := c.api.StartRun(ctx, name, apitypes.StartRunRequest{Scenario: "create", Input: map[string]any{"banner_text": banner}})
	if err != nil {
		t.Fatal(err)
	}
	r = c.waitRun(t, again.ApplyID)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunSucceeded)
	for _, tk := range r.Tasks {
		if got := hostsOf(tk, changed); len(got) > 0 {
			t.Errorf("re-run: task %q changed %s", tk.Name, strings.Join(got, ", "))
		}
	}
}
