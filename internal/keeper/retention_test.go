package keeper_test

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestRunsKeep: with runs.keep.count 1 the keeper prunes the per-host
// results of every run but the newest (create and the first rerun here)
// on its own, while the run records, history (counts) and the committed
// state stay and the newest run keeps its results.
func TestRunsKeep(t *testing.T) {
	f := inProcessKeeperWith(t, "", func(k *config.Keeper) {
		k.Runs.Keep = config.RunsKeep{Count: 1, Interval: config.Duration(time.Second)}
	})
	f.startSouls()
	f.registerFleet()
	created := f.createFleet()
	first := f.run("create", map[string]any{"motd": "Hello"}, false)
	last := f.run("create", map[string]any{"motd": "Hello"}, false)
	if first.Status != store.RunSucceeded || last.Status != store.RunSucceeded {
		t.Fatalf("reruns: %s, %s", first.Status, last.Status)
	}
	for _, id := range []string{created.ID, first.ID} {
		testutil.WaitFor(t, 20*time.Second, func() bool {
			r, err := f.c.GetRun(f.ctx, id)
			return err == nil && r.ResultsPrunedAt != nil
		}, "run %s's results pruned", id)
		r, err := f.c.GetRun(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range r.Tasks {
			if len(task.Hosts) > 0 {
				t.Errorf("pruned run %s still shows task %q on %d hosts", id, task.Name, len(task.Hosts))
			}
		}
		if r.Status != store.RunSucceeded {
			t.Errorf("pruned run %s: status %s", id, r.Status)
		}
	}
	r, err := f.c.GetRun(f.ctx, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.ResultsPrunedAt != nil || len(r.Tasks) == 0 || len(r.Tasks[0].Hosts) != len(fleetSIDs) {
		t.Errorf("the newest run lost its results: pruned at %v, %d tasks", r.ResultsPrunedAt, len(r.Tasks))
	}
	hist := f.history()
	if len(hist) != 3 {
		t.Fatalf("history after pruning: %d entries, want 3", len(hist))
	}
	for _, h := range hist {
		if h.Summary["hosts"] != float64(len(fleetSIDs)) {
			t.Errorf("history entry of %s: summary %v", h.RunID, h.Summary)
		}
	}
	if inc := f.incarnation(); inc.State["motd"] != "Hello" {
		t.Errorf("state after pruning: %v", inc.State)
	}
}
