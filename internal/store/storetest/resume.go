package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var resumeTests = []test{
	{"ResumeRun", testResumeRun},
	{"Drift", testDrift},
	{"UpgradeRun", testUpgradeRun},
}

// testResumeRun: a run keeps its commit, members and the run it resumes;
// a resume needs the incarnation error_locked and unlocks it as it
// starts; history links the committing resume to the run it resumed.
func testResumeRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache", "h1", "h2")
	r1 := store.Run{ID: "r1", Incarnation: "cache", Scenario: "restart", Commit: "c0ffee",
		Members: []string{"h1", "h2"}, KeeperID: "k1", CreatedAt: at(time.Hour)}
	must(t, s.StartRun(ctx, r1))
	got, err := s.GetRun(ctx, "r1")
	must(t, err)
	r1.Status = store.RunPending
	diff(t, "run with commit and members", got, r1)

	// A resume of a ready incarnation is refused: nothing to resume.
	must(t, s.FinishRun(ctx, "r1", store.RunSucceeded, "", at(2*time.Hour)))
	wantConflict(t, s.StartRun(ctx, store.Run{ID: "x", Incarnation: "cache", Scenario: "restart", ResumedFrom: "r1"}))

	must(t, s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "cache", Scenario: "restart", CreatedAt: at(3 * time.Hour)}))
	must(t, s.FinishRun(ctx, "r2", store.RunFailed, "wave 3 failed", at(4*time.Hour)))
	wantSlot(t, s, "cache", store.IncarnationErrorLocked, "", map[string]any{"created": true})
	r3 := store.Run{ID: "r3", Incarnation: "cache", Scenario: "restart", ResumedFrom: "r2", CreatedAt: at(5 * time.Hour)}
	must(t, s.StartRun(ctx, r3))
	inc := incarnation(t, s, "cache")
	if inc.Status != store.IncarnationApplying || inc.ActiveRun != "r3" || inc.LockReason != "" {
		t.Fatalf("after the resume started: %+v", inc)
	}
	// A second resume while the first is active: busy.
	details := wantConflict(t, s.StartRun(ctx, store.Run{ID: "r4", Incarnation: "cache", Scenario: "restart", ResumedFrom: "r2"}))
	diff(t, "busy details", details, "r3")
	must(t, s.CommitRun(ctx, "r3", map[string]any{"restarted": true}, store.Snapshot{}, at(6*time.Hour)))
	hist, err := s.ListHistory(ctx, "cache", 1)
	must(t, err)
	if len(hist) != 1 || hist[0].RunID != "r3" || hist[0].ResumedFrom != "r2" {
		t.Fatalf("history after the resume: %+v", hist)
	}
	runs, err := s.ListRuns(ctx, "cache", 1)
	must(t, err)
	if len(runs) != 1 || runs[0].ResumedFrom != "r2" {
		t.Fatalf("ListRuns: %+v", runs)
	}
}

// testDrift: the schedule and the last report of each incarnation.
func testDrift(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache", "h1")
	readyIncarnation(t, s, "redis", "web", "h2")
	d, err := s.GetDrift(ctx, "cache")
	must(t, err)
	diff(t, "no drift yet", d, store.Drift{Incarnation: "cache"})
	_, err = s.GetDrift(ctx, "ghost")
	wantNotFound(t, err)
	wantNotFound(t, s.SetDriftSchedule(ctx, "ghost", &store.DriftSchedule{Scenario: "create", Every: time.Hour}))
	wantNotFound(t, s.PutDriftReport(ctx, "ghost", store.DriftReport{}))

	sched := &store.DriftSchedule{Scenario: "create", Every: 90 * time.Minute}
	must(t, s.SetDriftSchedule(ctx, "cache", sched))
	rep := store.DriftReport{RunID: "d1", Scenario: "create", Drifted: true, Tasks: 1, CheckedAt: at(time.Hour),
		Hosts: map[string]store.DriftHost{"h1": {Status: store.DriftDrifted, Tasks: []store.DriftTask{{Path: "2", Task: "config", Diff: "-a\n+b"}}}}}
	must(t, s.PutDriftReport(ctx, "cache", rep))
	must(t, s.PutDriftReport(ctx, "web", store.DriftReport{RunID: "d2", Scenario: "create", CheckedAt: at(time.Hour),
		Hosts: map[string]store.DriftHost{"h2": {Status: store.DriftUnknown, Msg: "unreachable"}}}))
	d, err = s.GetDrift(ctx, "cache")
	must(t, err)
	diff(t, "drift of cache", d, store.Drift{Incarnation: "cache", Schedule: sched, Report: &rep})

	// A report keeps the schedule; clearing the schedule keeps the report.
	must(t, s.SetDriftSchedule(ctx, "cache", nil))
	list, err := s.ListDrift(ctx)
	must(t, err)
	if len(list) != 2 || list[0].Incarnation != "cache" || list[0].Schedule != nil || list[0].Report == nil || !list[0].Report.Drifted ||
		list[1].Incarnation != "web" || list[1].Report.Hosts["h2"].Status != store.DriftUnknown {
		t.Fatalf("ListDrift: %+v", list)
	}
	// Deleting the incarnation deletes its drift.
	must(t, s.DeleteIncarnation(ctx, "web"))
	list, err = s.ListDrift(ctx)
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("ListDrift after deleting web: %+v", list)
	}
}

// testUpgradeRun: the commit of an upgrade's migration run moves the
// incarnation to the new ref and commit with the new state; a failed one
// leaves it on the old commit.
func testUpgradeRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache", "h1")
	must(t, s.StartRun(ctx, store.Run{ID: "m1", Incarnation: "cache", Scenario: "migrate", Commit: "beef", UpgradeRef: "v2"}))
	must(t, s.FinishRun(ctx, "m1", store.RunFailed, "state does not fit", at(time.Hour)))
	if inc := incarnation(t, s, "cache"); inc.Commit != "c0ffee" || inc.Ref != "v1" {
		t.Fatalf("after a failed migration: %s %s", inc.Ref, inc.Commit)
	}
	must(t, s.Unlock(ctx, "cache"))
	must(t, s.StartRun(ctx, store.Run{ID: "m2", Incarnation: "cache", Scenario: "migrate", Commit: "beef", UpgradeRef: "v2"}))
	run, err := s.GetRun(ctx, "m2")
	must(t, err)
	if run.UpgradeRef != "v2" || run.Commit != "beef" {
		t.Fatalf("migration run: %+v", run)
	}
	must(t, s.CommitRun(ctx, "m2", map[string]any{"version": float64(2)}, store.Snapshot{}, at(2*time.Hour)))
	inc := incarnation(t, s, "cache")
	if inc.Commit != "beef" || inc.Ref != "v2" || inc.State["version"] != float64(2) || inc.Status != store.IncarnationReady {
		t.Fatalf("after the migration: %+v", inc)
	}
	// A normal run's commit leaves the commit alone.
	must(t, s.StartRun(ctx, store.Run{ID: "r3", Incarnation: "cache", Scenario: "restart", Commit: "beef"}))
	must(t, s.CommitRun(ctx, "r3", map[string]any{"version": float64(3)}, store.Snapshot{}, at(3*time.Hour)))
	if inc := incarnation(t, s, "cache"); inc.Commit != "beef" || inc.Ref != "v2" {
		t.Fatalf("after a normal run: %s %s", inc.Ref, inc.Commit)
	}
}
