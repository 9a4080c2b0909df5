package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var runTests = []test{
	{"StartRunConflicts", testStartRunConflicts},
	{"CheckRuns", testCheckRuns},
	{"SetRunStatus", testSetRunStatus},
	{"ListRuns", testListRuns},
	{"Results", testResults},
	{"LateResults", testLateResults},
	{"RunNotes", testRunNotes},
	{"CommitRun", testCommitRun},
	{"CommitRefused", testCommitRefused},
	{"FailedRun", testFailedRun},
	{"AbortRuns", testAbortRuns},
	{"Triggers", testTriggers},
}

// incarnation reads an incarnation or fails.
func incarnation(t *testing.T, s store.Store, name string) store.Incarnation {
	t.Helper()
	inc, err := s.GetIncarnation(t.Context(), name)
	must(t, err)
	return inc
}

// wantSlot checks an incarnation's status, active run and state.
func wantSlot(t *testing.T, s store.Store, name, status, active string, state map[string]any) {
	t.Helper()
	inc := incarnation(t, s, name)
	if inc.Status != status || inc.ActiveRun != active {
		t.Fatalf("incarnation %s: status %s active %q, want %s %q", name, inc.Status, inc.ActiveRun, status, active)
	}
	diff(t, "state of "+name, inc.State, state)
}

func testStartRunConflicts(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1")

	// A second run while the creation run is active: 409 with its apply_id.
	err := s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "cache", Scenario: "restart"})
	details := wantConflict(t, err)
	diff(t, "conflict details", details, create.ID)
	_, err = s.GetRun(ctx, "r2")
	wantNotFound(t, err)

	must(t, s.CommitRun(ctx, create.ID, map[string]any{"v": float64(1)}, store.Snapshot{}, at(time.Minute)))
	r2 := store.Run{ID: "r2", Incarnation: "cache", Scenario: "restart", Input: map[string]any{"force": true},
		ArchonID: "a1", KeeperID: "k1", CreatedAt: at(2 * time.Minute)}
	must(t, s.StartRun(ctx, r2))
	wantSlot(t, s, "cache", store.IncarnationApplying, "r2", map[string]any{"v": float64(1)})
	got, err := s.GetRun(ctx, "r2")
	must(t, err)
	r2.Status = store.RunPending
	diff(t, "started run", got, r2)

	// Same run id again: conflict, even on another incarnation.
	readyIncarnation(t, s, "redis", "other")
	wantConflict(t, s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "other", Scenario: "restart"}))
	wantSlot(t, s, "other", store.IncarnationReady, "", map[string]any{"created": true})

	// error_locked refuses runs (check runs too) until unlocked.
	must(t, s.FinishRun(ctx, "r2", store.RunFailed, "task 3 failed on h1", at(3*time.Minute)))
	wantConflict(t, s.StartRun(ctx, store.Run{ID: "r3", Incarnation: "cache", Scenario: "restart"}))
	wantConflict(t, s.StartRun(ctx, store.Run{ID: "r3", Incarnation: "cache", Scenario: "restart", Check: true}))
	must(t, s.Unlock(ctx, "cache"))
	must(t, s.StartRun(ctx, store.Run{ID: "r3", Incarnation: "cache", Scenario: "restart"}))

	wantNotFound(t, s.StartRun(ctx, store.Run{ID: "r4", Incarnation: "ghost", Scenario: "restart"}))
	wantCode(t, s.StartRun(ctx, store.Run{Incarnation: "other", Scenario: "restart"}), domain.CodeInvalid)
	wantSlot(t, s, "other", store.IncarnationReady, "", map[string]any{"created": true})
}

func testCheckRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache")
	state := map[string]any{"created": true}

	// A check run keeps the status but takes the slot.
	must(t, s.StartRun(ctx, store.Run{ID: "c1", Incarnation: "cache", Scenario: "restart", Check: true}))
	wantSlot(t, s, "cache", store.IncarnationReady, "c1", state)
	wantConflict(t, s.StartRun(ctx, store.Run{ID: "r1", Incarnation: "cache", Scenario: "restart"}))
	wantConflict(t, s.CommitRun(ctx, "c1", map[string]any{"x": 1}, store.Snapshot{}, base))
	must(t, s.FinishRun(ctx, "c1", store.RunSucceeded, "", at(time.Hour)))
	wantSlot(t, s, "cache", store.IncarnationReady, "", state)
	run, err := s.GetRun(ctx, "c1")
	must(t, err)
	if !run.Check || run.Status != store.RunSucceeded || run.FinishedAt == nil || !run.FinishedAt.Equal(at(time.Hour)) {
		t.Fatalf("check run after finish: %+v", run)
	}

	// A failed check run does not lock the incarnation.
	must(t, s.StartRun(ctx, store.Run{ID: "c2", Incarnation: "cache", Scenario: "restart", Check: true}))
	must(t, s.FinishRun(ctx, "c2", store.RunFailed, "would fail", at(time.Hour)))
	wantSlot(t, s, "cache", store.IncarnationReady, "", state)
	history, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(history) != 1 {
		t.Fatalf("check runs wrote history: %d snapshots", len(history))
	}
}

func testSetRunStatus(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache")
	must(t, s.SetRunStatus(ctx, run.ID, store.RunRunning, at(time.Second)))
	must(t, s.SetRunStatus(ctx, run.ID, store.RunRunning, at(time.Hour))) // StartedAt stays
	got, err := s.GetRun(ctx, run.ID)
	must(t, err)
	if got.Status != store.RunRunning || got.StartedAt == nil || !got.StartedAt.Equal(at(time.Second)) || got.FinishedAt != nil {
		t.Fatalf("after SetRunStatus: %+v", got)
	}
	wantCode(t, s.SetRunStatus(ctx, run.ID, store.RunSucceeded, base), domain.CodeInvalid)
	wantNotFound(t, s.SetRunStatus(ctx, "ghost", store.RunRunning, base))

	// A run aborted meanwhile cannot be revived.
	_, err = s.AbortRuns(ctx, "", at(time.Minute))
	must(t, err)
	details := wantConflict(t, s.SetRunStatus(ctx, run.ID, store.RunRunning, base))
	diff(t, "conflict details", details, store.RunAborted)
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	newIncarnation(t, s, "redis", "a")
	newIncarnation(t, s, "redis", "b")
	for i := range 4 {
		id := fmt.Sprintf("a-%d", i)
		must(t, s.FinishRun(ctx, incarnation(t, s, "a").ActiveRun, store.RunSucceeded, "", base))
		must(t, s.StartRun(ctx, store.Run{ID: id, Incarnation: "a", Scenario: "noop", CreatedAt: at(time.Duration(i+1) * time.Minute)}))
	}
	ids := func(runs []store.Run, err error) []string {
		t.Helper()
		must(t, err)
		out := []string{}
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	diff(t, "runs of a", ids(s.ListRuns(ctx, "a", 0)), []string{"a-3", "a-2", "a-1", "a-0", "a-create"})
	diff(t, "runs of a, limit 2", ids(s.ListRuns(ctx, "a", 2)), []string{"a-3", "a-2"})
	diff(t, "all runs, limit 6", ids(s.ListRuns(ctx, "", 6)), []string{"a-3", "a-2", "a-1", "a-0", "b-create", "a-create"})
	diff(t, "runs of nothing", ids(s.ListRuns(ctx, "ghost", 0)), []string{})
	_, err := s.GetRun(ctx, "ghost")
	wantNotFound(t, err)
}

func hostResult(run string, seq int, sid, status string) store.HostResult {
	return store.HostResult{RunID: run, Seq: seq, Path: fmt.Sprint(seq), TaskName: fmt.Sprintf("task %d", seq), SID: sid,
		Wave: 1, Status: status, Changed: status == string(domain.StatusChanged), RC: 0, Stdout: "out " + sid,
		Stderr: "", Msg: "msg", Diff: "", DurationMS: 12, StartedAt: base, FinishedAt: at(time.Second)}
}

func testResults(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1", "h2")
	r21 := hostResult(run.ID, 2, "h1", "changed")
	r21.Data = map[string]any{"output": map[string]any{"role": "master"}}
	in := []store.HostResult{r21, hostResult(run.ID, 1, "h2", "ok"), hostResult(run.ID, 1, "h1", "ok")}
	must(t, s.RecordResults(ctx, in))
	got, err := s.ListResults(ctx, run.ID)
	must(t, err)
	diff(t, "results by seq, sid", got, []store.HostResult{in[2], in[1], in[0]})

	// Upsert on (run, seq, sid); within one call the last one wins.
	failed := hostResult(run.ID, 1, "h2", "failed")
	failed.RC, failed.Stderr = 2, "boom"
	must(t, s.RecordResults(ctx, []store.HostResult{hostResult(run.ID, 1, "h2", "running"), failed}))
	got, err = s.ListResults(ctx, run.ID)
	must(t, err)
	diff(t, "results after upsert", got, []store.HostResult{in[2], failed, in[0]})

	// Many results in one call (several INSERT batches).
	var many []store.HostResult
	for i := range 450 {
		many = append(many, hostResult(run.ID, 10, fmt.Sprintf("s%04d", i), "ok"))
	}
	must(t, s.RecordResults(ctx, many))
	got, err = s.ListResults(ctx, run.ID)
	must(t, err)
	if len(got) != 453 || got[3].SID != "s0000" || got[452].SID != "s0449" {
		t.Fatalf("after bulk: %d results", len(got))
	}

	wantNotFound(t, s.RecordResults(ctx, []store.HostResult{hostResult("ghost", 1, "h1", "ok")}))
	must(t, s.RecordResults(ctx, nil))

	// Late results of a finished run are still recorded.
	must(t, s.FinishRun(ctx, run.ID, store.RunFailed, "x", base))
	must(t, s.RecordResults(ctx, []store.HostResult{hostResult(run.ID, 99, "h1", "ok")}))
	got, err = s.ListResults(ctx, run.ID)
	must(t, err)
	if got[len(got)-1].Seq != 99 {
		t.Fatalf("late result not recorded")
	}
	wantSlot(t, s, "cache", store.IncarnationErrorLocked, "", map[string]any{})
}

func testCommitRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1")
	must(t, s.SetRunStatus(ctx, run.ID, store.RunRunning, base))
	state := map[string]any{"master": "h1", "replicas": []any{"h2", "h3"}, "port": float64(6379)}
	summary := map[string]any{"h1": map[string]any{"ok": float64(3), "changed": float64(1), "failed": float64(0), "skipped": float64(0)}}
	must(t, s.CommitRun(ctx, run.ID, state, store.Snapshot{Summary: summary}, at(time.Minute)))

	wantSlot(t, s, "cache", store.IncarnationReady, "", state)
	got, err := s.GetRun(ctx, run.ID)
	must(t, err)
	if got.Status != store.RunSucceeded || got.FinishedAt == nil || !got.FinishedAt.Equal(at(time.Minute)) {
		t.Fatalf("committed run: %+v", got)
	}
	history, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(history) != 1 || history[0].ID == 0 {
		t.Fatalf("history = %+v", history)
	}
	diff(t, "snapshot", history[0], store.Snapshot{ID: history[0].ID, Incarnation: "cache", RunID: run.ID,
		Scenario: "create", State: state, Summary: summary, CreatedAt: at(time.Minute)})

	// A second commit replaces the state and appends history, newest first.
	must(t, s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "cache", Scenario: "failover"}))
	must(t, s.CommitRun(ctx, "r2", map[string]any{"master": "h2"}, store.Snapshot{Scenario: "failover", CreatedAt: at(time.Hour)}, at(2*time.Minute)))
	wantSlot(t, s, "cache", store.IncarnationReady, "", map[string]any{"master": "h2"})
	history, err = s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(history) != 2 || history[0].RunID != "r2" || history[1].RunID != run.ID || !history[0].CreatedAt.Equal(at(time.Hour)) {
		t.Fatalf("history after second commit = %+v", history)
	}
	diff(t, "empty summary", history[0].Summary, map[string]any{})
	limited, err := s.ListHistory(ctx, "cache", 1)
	must(t, err)
	if len(limited) != 1 || limited[0].RunID != "r2" {
		t.Fatalf("ListHistory limit 1 = %+v", limited)
	}
}

// testCommitRefused: a commit that is not allowed writes nothing.
func testCommitRefused(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache")
	state := map[string]any{"created": true}
	wantNotFound(t, s.CommitRun(ctx, "ghost", map[string]any{"x": 1}, store.Snapshot{}, base))

	must(t, s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "cache", Scenario: "restart"}))
	must(t, s.FinishRun(ctx, "r2", store.RunCancelled, "cancelled by a1", at(time.Minute)))
	details := wantConflict(t, s.CommitRun(ctx, "r2", map[string]any{"x": 1}, store.Snapshot{}, at(2*time.Minute)))
	diff(t, "conflict details", details, store.RunCancelled)
	wantConflict(t, s.FinishRun(ctx, "r2", store.RunFailed, "again", at(2*time.Minute)))
	wantSlot(t, s, "cache", store.IncarnationErrorLocked, "", state)
	history, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(history) != 1 {
		t.Fatalf("refused commit wrote history: %d snapshots", len(history))
	}
	inc := incarnation(t, s, "cache")
	if inc.LockReason != "run r2 cancelled: cancelled by a1" {
		t.Fatalf("LockReason = %q", inc.LockReason)
	}
	wantCode(t, s.FinishRun(ctx, "r2", "weird", "", base), domain.CodeInvalid)
	wantNotFound(t, s.FinishRun(ctx, "ghost", store.RunFailed, "", base))
}

// testFailedRun: a failed run leaves state and history untouched and locks
// the incarnation until an Archon unlocks it.
func testFailedRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache", "h1")
	state := map[string]any{"created": true}
	must(t, s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "cache", Scenario: "restart"}))
	must(t, s.SetRunStatus(ctx, "r2", store.RunRunning, base))
	must(t, s.RecordResults(ctx, []store.HostResult{hostResult("r2", 1, "h1", "failed")}))
	must(t, s.FinishRun(ctx, "r2", store.RunFailed, "task 1 failed on h1", at(time.Minute)))

	wantSlot(t, s, "cache", store.IncarnationErrorLocked, "", state)
	inc := incarnation(t, s, "cache")
	if inc.LockReason != "run r2 failed: task 1 failed on h1" {
		t.Fatalf("LockReason = %q", inc.LockReason)
	}
	run, err := s.GetRun(ctx, "r2")
	must(t, err)
	if run.Status != store.RunFailed || run.Error != "task 1 failed on h1" || run.FinishedAt == nil {
		t.Fatalf("failed run: %+v", run)
	}
	history, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(history) != 1 || history[0].RunID != "cache-create" {
		t.Fatalf("history after failure = %+v", history)
	}

	must(t, s.Unlock(ctx, "cache"))
	inc = incarnation(t, s, "cache")
	if inc.Status != store.IncarnationReady || inc.LockReason != "" {
		t.Fatalf("after unlock: %+v", inc)
	}
	details := wantConflict(t, s.Unlock(ctx, "cache"))
	diff(t, "unlock conflict details", details, store.IncarnationReady)
	wantNotFound(t, s.Unlock(ctx, "ghost"))

	// A normal run that succeeds without a commit leaves the incarnation ready.
	must(t, s.StartRun(ctx, store.Run{ID: "r3", Incarnation: "cache", Scenario: "noop"}))
	must(t, s.FinishRun(ctx, "r3", store.RunSucceeded, "", at(time.Hour)))
	wantSlot(t, s, "cache", store.IncarnationReady, "", state)
}

func testAbortRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "a")
	readyIncarnation(t, s, "redis", "b")
	readyIncarnation(t, s, "redis", "c")
	readyIncarnation(t, s, "redis", "d")
	must(t, s.StartRun(ctx, store.Run{ID: "ra", Incarnation: "a", Scenario: "x", KeeperID: "k1", CreatedAt: at(1 * time.Second)}))
	must(t, s.SetRunStatus(ctx, "ra", store.RunRunning, base))
	must(t, s.StartRun(ctx, store.Run{ID: "rb", Incarnation: "b", Scenario: "x", KeeperID: "k1", CreatedAt: at(2 * time.Second), Check: true}))
	must(t, s.StartRun(ctx, store.Run{ID: "rc", Incarnation: "c", Scenario: "x", KeeperID: "k2", CreatedAt: at(3 * time.Second)}))
	must(t, s.StartRun(ctx, store.Run{ID: "rd", Incarnation: "d", Scenario: "x", KeeperID: "k1", CreatedAt: at(4 * time.Second)}))
	must(t, s.FinishRun(ctx, "rd", store.RunFailed, "x", base))
	must(t, s.Unlock(ctx, "d"))

	aborted, err := s.AbortRuns(ctx, "k1", at(time.Hour))
	must(t, err)
	if len(aborted) != 2 || aborted[0].ID != "ra" || aborted[1].ID != "rb" {
		t.Fatalf("AbortRuns(k1) = %+v", aborted)
	}
	for _, r := range aborted {
		if r.Status != store.RunAborted || r.FinishedAt == nil || !r.FinishedAt.Equal(at(time.Hour)) || r.Error == "" {
			t.Fatalf("aborted run: %+v", r)
		}
	}
	created := map[string]any{"created": true}
	wantSlot(t, s, "a", store.IncarnationErrorLocked, "", created)
	wantSlot(t, s, "b", store.IncarnationReady, "", created) // a check run changes no status
	wantSlot(t, s, "c", store.IncarnationApplying, "rc", created)
	wantSlot(t, s, "d", store.IncarnationReady, "", created)
	if reason := incarnation(t, s, "a").LockReason; reason == "" {
		t.Fatalf("no lock reason after abort")
	}
	// Late commits of aborted runs change nothing.
	wantConflict(t, s.CommitRun(ctx, "ra", map[string]any{"late": true}, store.Snapshot{}, at(2*time.Hour)))
	wantSlot(t, s, "a", store.IncarnationErrorLocked, "", created)

	aborted, err = s.AbortRuns(ctx, "", at(time.Hour))
	must(t, err)
	if len(aborted) != 1 || aborted[0].ID != "rc" {
		t.Fatalf("AbortRuns(all) = %+v", aborted)
	}
	wantSlot(t, s, "c", store.IncarnationErrorLocked, "", created)
	aborted, err = s.AbortRuns(ctx, "", at(time.Hour))
	must(t, err)
	if len(aborted) != 0 {
		t.Fatalf("nothing left to abort, got %+v", aborted)
	}
}

func testTriggers(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache")
	readyIncarnation(t, s, "redis", "other")
	ts := []store.PendingTrigger{
		{Incarnation: "cache", Scenario: "configure", Task: "restart", SID: "h2", RunID: "r1", CreatedAt: base},
		{Incarnation: "cache", Scenario: "configure", Task: "restart", SID: "h1", RunID: "r1", CreatedAt: base},
		{Incarnation: "cache", Scenario: "upgrade", Task: "reload", SID: "h1", RunID: "r1", CreatedAt: base},
		{Incarnation: "other", Scenario: "configure", Task: "restart", SID: "h1", RunID: "r1", CreatedAt: base},
	}
	must(t, s.AddTriggers(ctx, ts))
	got, err := s.ListTriggers(ctx, "cache", "configure")
	must(t, err)
	diff(t, "triggers", got, []store.PendingTrigger{ts[1], ts[0]})
	all, err := s.ListTriggers(ctx, "cache", "")
	must(t, err)
	diff(t, "all triggers of cache", all, []store.PendingTrigger{ts[1], ts[0], ts[2]})

	// Adding again refreshes the run; still one trigger per key.
	again := ts[0]
	again.RunID, again.CreatedAt = "r2", at(time.Hour)
	must(t, s.AddTriggers(ctx, []store.PendingTrigger{again}))
	got, err = s.ListTriggers(ctx, "cache", "configure")
	must(t, err)
	diff(t, "refreshed triggers", got, []store.PendingTrigger{ts[1], again})

	must(t, s.ClearTrigger(ctx, "cache", "configure", "restart", "h1"))
	must(t, s.ClearTrigger(ctx, "cache", "configure", "restart", "h1")) // already gone: fine
	got, err = s.ListTriggers(ctx, "cache", "configure")
	must(t, err)
	diff(t, "after clear", got, []store.PendingTrigger{again})
	other, err := s.ListTriggers(ctx, "other", "configure")
	must(t, err)
	diff(t, "other incarnation untouched", other, []store.PendingTrigger{ts[3]})

	wantNotFound(t, s.AddTriggers(ctx, []store.PendingTrigger{{Incarnation: "ghost", Scenario: "x", Task: "t", SID: "h1"}}))
}
