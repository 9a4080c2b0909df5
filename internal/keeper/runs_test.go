package keeper_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestRuns drives the run engine end to end through the Operator API with
// an in-process keeper and three real souls: create, idempotent re-run,
// check mode, one run at a time, a failure on one host with its lock and
// audited unlock, and an unreachable host.
func TestRuns(t *testing.T) {
	backends(t, testRuns)
}

func testRuns(t *testing.T, dbURL string) {
	f := inProcessKeeper(t, dbURL)
	f.startSouls()
	f.registerFleet()
	created := f.createFleet()
	for sid, h := range hosts(created, "Apply the site destiny") {
		if !h.Changed || destinyOutput(h)["label_changed"] != true {
			t.Errorf("create: the destiny on %s: changed %v, output %v", sid, h.Changed, destinyOutput(h))
		}
	}
	if got := sortedKeys(hosts(created, "First host by SID")); !slices.Equal(got, []string{"soul-a"}) {
		t.Errorf("run_once ran on %v", got)
	}
	for _, sid := range fleetSIDs {
		for path, want := range map[string]string{
			"srv/fleet/motd":       "Hello from " + sid + "\n",
			"srv/fleet/card.txt":   "host " + sid + " of " + fleetInc + "\nmotd Hello\n",
			"srv/fleet/site/label": "HELLO on " + sid + "\n",
		} {
			if got := f.file(sid, path); got != want {
				t.Errorf("%s:/%s = %q, want %q", sid, path, got, want)
			}
		}
	}
	hist := f.history()
	if len(hist) != 1 || hist[0].Scenario != "create" || cmp.Diff(helloState, hist[0].State) != "" || hist[0].Summary["hosts"] != 3.0 {
		t.Fatalf("history after create: %+v", hist)
	}
	before := f.mtime("soul-b", "srv/fleet/motd")

	t.Run("rerun changes nothing", func(t *testing.T) {
		r := f.run("create", map[string]any{"motd": "Hello"}, false)
		if r.Status != store.RunSucceeded {
			t.Fatalf("re-run: %s (%s)", r.Status, r.Error)
		}
		n := 0
		for _, task := range r.Tasks {
			for _, h := range task.Hosts {
				n++
				if h.Changed || h.Status != string(domain.StatusOK) {
					t.Errorf("re-run: task %q on %s: status %s, changed %v", task.Name, h.SID, h.Status, h.Changed)
				}
			}
		}
		if n != 5*3+1 {
			t.Errorf("re-run has %d host results, want 16:\n%s", n, runJSON(r))
		}
		for sid, h := range hosts(r, "Apply the site destiny") {
			if destinyOutput(h)["label_changed"] != false {
				t.Errorf("re-run: the destiny on %s says %v", sid, destinyOutput(h))
			}
		}
		if got := f.mtime("soul-b", "srv/fleet/motd"); !got.Equal(before) {
			t.Errorf("the re-run rewrote the motd (mtime %v, was %v)", got, before)
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationReady || cmp.Diff(helloState, inc.State) != "" {
			t.Errorf("after re-run: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != 2 || h[0].RunID != r.ID || cmp.Diff(helloState, h[0].State) != "" {
			t.Errorf("history after the re-run (newest first): %+v", h)
		}
	})

	t.Run("check mode changes and commits nothing", func(t *testing.T) {
		hist := f.history()
		r := f.run("create", map[string]any{"motd": "Bonjour"}, true)
		if r.Status != store.RunSucceeded || !r.Check {
			t.Fatalf("check run: %s check=%v (%s)", r.Status, r.Check, r.Error)
		}
		for sid, h := range hosts(r, "Write the motd") {
			if !h.Changed || !strings.Contains(h.Diff, "Bonjour") {
				t.Errorf("check mode on %s: the motd would change, got changed=%v diff %q", sid, h.Changed, h.Diff)
			}
		}
		for sid, h := range hosts(r, "Apply the site destiny") {
			if !h.Changed || destinyOutput(h)["label_changed"] != true {
				t.Errorf("check mode: the destiny on %s would change its label: changed %v, output %v", sid, h.Changed, destinyOutput(h))
			}
		}
		probe := hosts(r, "Probe the motd")
		if len(probe) != 3 || !strings.HasPrefix(probe["soul-c"].Stdout, "Hello from soul-c") {
			t.Errorf("the read-only probe did not run in check mode: %+v", probe)
		}
		for _, sid := range fleetSIDs {
			if got := f.file(sid, "srv/fleet/motd"); got != "Hello from "+sid+"\n" {
				t.Errorf("check mode wrote %s's motd: %q", sid, got)
			}
			if got := f.file(sid, "srv/fleet/site/label"); got != "HELLO on "+sid+"\n" {
				t.Errorf("check mode wrote %s's site label through the destiny: %q", sid, got)
			}
		}
		if got := f.mtime("soul-b", "srv/fleet/motd"); !got.Equal(before) {
			t.Errorf("check mode touched the motd")
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationReady || cmp.Diff(helloState, inc.State) != "" {
			t.Errorf("after check run: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != len(hist) || h[0].ID != hist[0].ID {
			t.Errorf("check mode added history: %d snapshots, was %d", len(h), len(hist))
		}
	})

	t.Run("one run at a time", func(t *testing.T) {
		acc, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "slow", Input: map[string]any{"stamp": "s1", "duration": "2s"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "create"})
		ae := apiError(t, err)
		var active string
		if ae.Status != 409 || ae.Code != string(domain.CodeConflict) || json.Unmarshal(ae.Details, &active) != nil || active != acc.ApplyID {
			t.Fatalf("second run while %s is active: %v (details %s)", acc.ApplyID, err, ae.Details)
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationApplying || inc.ActiveRun != acc.ApplyID {
			t.Errorf("during the run: status %s, active run %q", inc.Status, inc.ActiveRun)
		}
		// Its progress streams as Server-Sent Events until the done event.
		ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
		defer cancel()
		slept := map[string]bool{}
		done, err := f.c.WatchRun(ctx, acc.ApplyID, func(ev apitypes.RunEvent) {
			if ev.Type == "host" && ev.Result != nil && ev.Result.TaskName == "Sleep" {
				slept[ev.Result.SID] = true
			}
		})
		if err != nil || done.Status != store.RunSucceeded || len(slept) != 3 {
			t.Fatalf("slow run's events: done %+v, %v; Sleep results from %v", done, err, slept)
		}
		if r := f.awaitRun(acc.ApplyID, 30*time.Second); r.Status != store.RunSucceeded {
			t.Fatalf("slow run: %s (%s)", r.Status, r.Error)
		}
		for _, sid := range fleetSIDs {
			if got := f.file(sid, "srv/fleet/stamp"); got != "s1\n" {
				t.Errorf("%s stamp %q", sid, got)
			}
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationReady || inc.State["stamp"] != "s1" {
			t.Errorf("after the slow run: %s %v", inc.Status, inc.State)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		inc0, hist := f.incarnation(), f.history()
		acc, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "slow", Input: map[string]any{"stamp": "cancelled", "duration": "30s"}})
		if err != nil {
			t.Fatal(err)
		}
		f.awaitSleep(acc.ApplyID)
		began := time.Now()
		if err := f.c.CancelRun(f.ctx, acc.ApplyID); err != nil {
			t.Fatal(err)
		}
		r := f.awaitRun(acc.ApplyID, 10*time.Second)
		if r.Status != store.RunCancelled || time.Since(began) > 5*time.Second {
			t.Fatalf("cancelled run: %s after %s (%s)", r.Status, time.Since(began), r.Error)
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationErrorLocked || cmp.Diff(inc0.State, inc.State) != "" {
			t.Errorf("after cancel: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != len(hist) {
			t.Errorf("a cancelled run added history")
		}
		// The souls were told to stop their sleep.
		testutil.WaitFor(t, 5*time.Second, func() bool {
			for _, sid := range fleetSIDs {
				if !strings.Contains(f.souls[sid].Output(), "keeper cancelled a task") {
					return false
				}
			}
			return true
		}, "every soul to be told of the cancel")
		if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "slow run cancelled on purpose"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("failure on one host locks until unlocked", func(t *testing.T) {
		inc0, hist := f.incarnation(), f.history()
		r := f.run("break", map[string]any{"host": "soul-b"}, false)
		if r.Status != store.RunFailed || r.Error == "" {
			t.Fatalf("break run: %s (%q)", r.Status, r.Error)
		}
		fail := hosts(r, "Fail on one host")
		if got := sortedKeys(fail); !slices.Equal(got, []string{"soul-b"}) || fail["soul-b"].Status != string(domain.StatusFailed) || !strings.Contains(fail["soul-b"].Msg, "planned failure on soul-b") {
			t.Errorf("failing task: %+v", fail)
		}
		if got := sortedKeys(hosts(r, "Touch a marker")); !slices.Equal(got, fleetSIDs) {
			t.Errorf("marker ran on %v", got)
		}
		if got := hosts(r, "Never reached"); len(got) != 0 {
			t.Errorf("a task after the failure ran: %+v", got)
		}
		for _, sid := range fleetSIDs {
			if f.file(sid, "srv/fleet/never") != "" {
				t.Errorf("the task after the failure wrote on %s", sid)
			}
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
			t.Fatalf("after the failure: status %s, active %q", inc.Status, inc.ActiveRun)
		}
		if d := cmp.Diff(inc0.State, inc.State); d != "" {
			t.Errorf("a failed run changed the state:\n%s", d)
		}
		if h := f.history(); len(h) != len(hist) || h[0].ID != hist[0].ID {
			t.Errorf("a failed run changed the history: %d snapshots, was %d", len(h), len(hist))
		}

		_, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "create"})
		if ae := apiError(t, err); ae.Status != 409 || !strings.Contains(ae.Message, "error_locked") {
			t.Fatalf("a run on an error_locked incarnation: %v", err)
		}
		if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, ""); apiError(t, err).Status != 400 {
			t.Fatalf("unlock without a reason: %v", err)
		}
		unlocked, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "soul-b checked by hand")
		if err != nil || unlocked.Status != store.IncarnationReady {
			t.Fatalf("unlock: %+v, %v", unlocked.Status, err)
		}
		audit, err := f.c.ListAudit(f.ctx, apitypes.AuditQuery{Action: "POST /v1/incarnations/{name}/unlock"})
		if err != nil {
			t.Fatal(err)
		}
		if len(audit) == 0 || audit[0].Target != fleetInc || !strings.Contains(runJSONAny(audit[0].Summary), "soul-b checked by hand") {
			t.Errorf("unlock audit: %+v", audit)
		}
		if r := f.run("create", map[string]any{"motd": "Hello"}, false); r.Status != store.RunSucceeded {
			t.Fatalf("create after unlock: %s (%s)", r.Status, r.Error)
		}
	})

	t.Run("unreachable host fails fast", func(t *testing.T) {
		inc0, hist := f.incarnation(), f.history()
		f.killSoul("soul-c")
		began := time.Now()
		acc, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "create", Input: map[string]any{"motd": "Hello"}})
		if err != nil {
			t.Fatal(err)
		}
		r := f.awaitRun(acc.ApplyID, 15*time.Second)
		took := time.Since(began)
		if r.Status != store.RunFailed || took > 10*time.Second {
			t.Fatalf("run with a dead soul: %s after %s (%s)", r.Status, took, r.Error)
		}
		if h := hosts(r, "Base directory")["soul-c"]; h.Status != string(domain.StatusUnreachable) {
			t.Errorf("dead soul's result: %+v\n%s", h, runJSON(r))
		}
		inc := f.incarnation()
		if inc.Status != store.IncarnationErrorLocked || cmp.Diff(inc0.State, inc.State) != "" {
			t.Errorf("after the unreachable host: %s %v", inc.Status, inc.State)
		}
		if h := f.history(); len(h) != len(hist) {
			t.Errorf("history grew to %d", len(h))
		}
		f.waitSouls(store.SoulDisconnected, "soul-c")
		t.Logf("the run with a dead soul failed in %s", took.Round(time.Millisecond))

		// Known disconnected by now: unreachable at once again.
		if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "soul-c is being replaced"); err != nil {
			t.Fatal(err)
		}
		began = time.Now()
		r = f.run("create", map[string]any{"motd": "Hello"}, false)
		if took := time.Since(began); r.Status != store.RunFailed || took > 10*time.Second || hosts(r, "Base directory")["soul-c"].Status != string(domain.StatusUnreachable) {
			t.Fatalf("run with a disconnected soul: %s after %s\n%s", r.Status, took, runJSON(r))
		}
		if got := sortedKeys(hosts(r, "Base directory")); !slices.Equal(got, fleetSIDs) {
			t.Errorf("first task's hosts %v", got)
		}
		if f.incarnation().Status != store.IncarnationErrorLocked {
			t.Errorf("not error_locked after the second run with a dead soul")
		}
	})
}

func runJSONAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRunsKeeperCrash SIGKILLs the real keeper binary in the middle of a
// run and starts it again on the same data and port: the run is aborted,
// the incarnation error_locked with nothing committed, and the souls
// reconnect by themselves and serve the next run.
func TestRunsKeeperCrash(t *testing.T) {
	backends(t, testKeeperCrash)
}

// awaitRun is a procedure waiting for a run given by its apply_id.
const awaitRun = `vars:
  apply_id:
    type: string
    visibility: public
steps:
  wait:
    action:
      apicall: "run show {{apply_id}}"
      parse:
        - filter: apply_id
          op: push
          var: "@deps"
`

// crashSleep is how long the run the keeper dies in sleeps on each soul.
const crashSleep = 5 * time.Second

func testKeeperCrash(t *testing.T, dbURL string) {
	f, serveArgs := binaryKeeper(t, dbURL)
	k := f.serveBinary(serveArgs)
	f.startSouls()
	f.registerFleet()
	f.createFleet()
	inc0, hist := f.incarnation(), f.history()

	acc, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "slow", Input: map[string]any{"stamp": "crash", "duration": crashSleep.String()}})
	if err != nil {
		t.Fatal(err)
	}
	// A Checker task waits for the run through @deps.
	if _, err := f.c.PutProcedure(f.ctx, "await_run", awaitRun); err != nil {
		t.Fatal(err)
	}
	exec, err := f.c.ExecuteProcedure(f.ctx, "await_run", map[string]any{"apply_id": acc.ApplyID})
	if err != nil {
		t.Fatal(err)
	}
	f.awaitSleep(acc.ApplyID)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		task, err := f.c.GetCheckerTask(f.ctx, exec.TaskIDs[0])
		return err == nil && task.Status == "RUNNING" && strings.Contains(taskLog(task), "waiting for 1 dependency")
	}, "the checker task to wait for the run")
	if err := k.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	k.Wait(10 * time.Second)
	killed := time.Now()
	for _, sid := range fleetSIDs {
		if got := f.file(sid, "srv/fleet/stamp"); got != "crash\n" {
			t.Fatalf("%s stamp %q: the run did not get that far", sid, got)
		}
	}

	restarted := time.Now()
	f.serveBinary(serveArgs)
	r, err := f.c.GetRun(f.ctx, acc.ApplyID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunAborted || r.Error == "" || r.FinishedAt == nil {
		t.Fatalf("the run after the crash: %s (%q)", r.Status, r.Error)
	}
	inc := f.incarnation()
	if inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
		t.Fatalf("the incarnation after the crash: status %s, active %q", inc.Status, inc.ActiveRun)
	}
	if d := cmp.Diff(inc0.State, inc.State); d != "" || inc.State["stamp"] != nil {
		t.Errorf("the aborted run committed state (-before +after):\n%s", d)
	}
	if h := f.history(); len(h) != len(hist) || h[0].ID != hist[0].ID {
		t.Errorf("the aborted run changed the history: %d snapshots, was %d", len(h), len(hist))
	}
	if _, err := f.c.StartRun(f.ctx, fleetInc, apitypes.StartRunRequest{Scenario: "create"}); apiError(t, err).Status != 409 {
		t.Fatalf("a run before unlocking: %v", err)
	}
	// The Checker task that waited is failed, not left RUNNING.
	if task, err := f.c.GetCheckerTask(f.ctx, exec.TaskIDs[0]); err != nil || task.Status != "FAILURE" || !strings.Contains(task.RunError, "keeper stopped") {
		t.Errorf("the checker task after the crash: %s %q, %v", task.Status, task.RunError, err)
	}

	// The restarted keeper marked every soul disconnected; they come back
	// on their own (connected since the restart).
	testutil.WaitFor(t, 20*time.Second, func() bool {
		for _, sid := range fleetSIDs {
			s, err := f.c.GetSoul(f.ctx, sid)
			if err != nil || s.Status != store.SoulConnected || s.LastSeen.Before(restarted) {
				return false
			}
		}
		return true
	}, "souls to reconnect to the restarted keeper")
	t.Logf("souls reconnected %s after the restart", time.Since(restarted).Round(time.Millisecond))
	if _, err := f.c.UnlockIncarnation(f.ctx, fleetInc, "keeper crashed during slow; hosts checked"); err != nil {
		t.Fatal(err)
	}
	if r := f.run("create", map[string]any{"motd": "Hello"}, false); r.Status != store.RunSucceeded || len(hosts(r, "Probe the motd")) != 3 {
		t.Fatalf("create after the restart: %s (%s)\n%s", r.Status, r.Error, runJSON(r))
	}
	if inc := f.incarnation(); inc.Status != store.IncarnationReady {
		t.Fatalf("after the restart and a new run: %s", inc.Status)
	}

	// The souls finish their sleep and deliver its results late, to the
	// new keeper: they change nothing.
	time.Sleep(time.Until(killed.Add(crashSleep + time.Second)))
	if r, err := f.c.GetRun(f.ctx, acc.ApplyID); err != nil || r.Status != store.RunAborted {
		t.Errorf("the aborted run after its late results: %s, %v", r.Status, err)
	}
	if inc := f.incarnation(); inc.Status != store.IncarnationReady || cmp.Diff(helloState, inc.State) != "" {
		t.Errorf("late results of the aborted run changed the incarnation: %s %v", inc.Status, inc.State)
	}
}
