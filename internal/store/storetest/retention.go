package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var retentionTests = []test{
	{"PruneByCount", testPruneByCount},
	{"PruneKeepsResume", testPruneKeepsResume},
	{"PruneTexts", testPruneTexts},
	{"PruneRecords", testPruneRecords},
	{"RunsInRecordedOrder", testRunsInRecordedOrder},
}

// finishedRun starts run id on inc at minute m, records one result per
// host and ends it committed (or with status).
func finishedRun(t *testing.T, s store.Store, inc, id string, m int, check bool, status string, hosts ...string) {
	t.Helper()
	ctx := t.Context()
	must(t, s.StartRun(ctx, store.Run{ID: id, Incarnation: inc, Scenario: "deploy", Check: check, KeeperID: "k1",
		CreatedAt: at(time.Duration(m) * time.Minute)}))
	for _, h := range hosts {
		must(t, s.RecordResults(ctx, []store.HostResult{hostResult(id, 1, h, "ok")}))
	}
	must(t, s.RecordRunNote(ctx, store.RunNote{RunID: id, Seq: 2, Path: "2", TaskName: "db only", Note: "no host"}))
	if status == store.RunSucceeded && !check {
		must(t, s.CommitRun(ctx, id, map[string]any{"run": id}, store.Snapshot{}, at(time.Duration(m)*time.Minute+time.Second)))
		return
	}
	must(t, s.FinishRun(ctx, id, status, "", at(time.Duration(m)*time.Minute+time.Second)))
}

// kept checks which runs still have their results and notes, and that
// the pruned ones say so.
func kept(t *testing.T, s store.Store, want map[string]bool) {
	t.Helper()
	ctx := t.Context()
	for id, keep := range want {
		rs, err := s.ListResults(ctx, id)
		must(t, err)
		notes, err := s.ListRunNotes(ctx, id)
		must(t, err)
		run, err := s.GetRun(ctx, id)
		must(t, err)
		if keep && (len(rs) == 0 || len(notes) == 0 || run.ResultsPrunedAt != nil) {
			t.Errorf("run %s: want its results kept, have %d results, %d notes, pruned at %v", id, len(rs), len(notes), run.ResultsPrunedAt)
		}
		if !keep && (len(rs) != 0 || len(notes) != 0 || run.ResultsPrunedAt == nil) {
			t.Errorf("run %s: want its results pruned, have %d results, %d notes, pruned at %v", id, len(rs), len(notes), run.ResultsPrunedAt)
		}
	}
}

// testPruneByCount: runs beyond the newest MaxCount, or older than
// MaxAge, lose their per-host results; the newest run, the newest normal
// run and a run a pending trigger names keep them; run records, history
// and state stay.
func testPruneByCount(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1", "h2")
	must(t, s.RecordResults(ctx, []store.HostResult{hostResult(create.ID, 1, "h1", "ok")}))
	must(t, s.CommitRun(ctx, create.ID, map[string]any{"created": true}, store.Snapshot{}, at(time.Second)))
	for i, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		finishedRun(t, s, "cache", id, i+1, false, store.RunSucceeded, "h1", "h2")
	}
	finishedRun(t, s, "cache", "r6-check", 6, true, store.RunSucceeded, "h1")
	must(t, s.AddTriggers(ctx, []store.PendingTrigger{{Incarnation: "cache", Scenario: "deploy", Task: "restart", SID: "h2", RunID: "r2"}}))

	rep, err := s.PruneResults(ctx, store.RunRetention{}, at(time.Hour))
	must(t, err)
	if rep != (store.PruneReport{}) {
		t.Errorf("retention disabled pruned %+v", rep)
	}
	now := at(time.Hour)
	rep, err = s.PruneResults(ctx, store.RunRetention{MaxCount: 2}, now)
	must(t, err)
	// Newest first: r6-check, r5 (kept: count), r4, r3, r2 (trigger), r1, create.
	if rep != (store.PruneReport{Runs: 4, Results: 7}) {
		t.Errorf("pruned %+v, want 4 runs, 7 results", rep)
	}
	kept(t, s, map[string]bool{"r6-check": true, "r5": true, "r4": false, "r3": false, "r2": true, "r1": false, create.ID: false})
	if run, _ := s.GetRun(ctx, "r4"); run.ResultsPrunedAt == nil || !run.ResultsPrunedAt.Equal(now) || run.Status != store.RunSucceeded {
		t.Errorf("pruned run r4 = %+v", run)
	}
	hist, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(hist) != 6 {
		t.Errorf("history after pruning has %d entries, want 6", len(hist))
	}
	inc, err := s.GetIncarnation(ctx, "cache")
	must(t, err)
	if inc.State["run"] != "r5" {
		t.Errorf("state after pruning = %v", inc.State)
	}
	rep, err = s.PruneResults(ctx, store.RunRetention{MaxCount: 2}, now)
	must(t, err)
	if rep.Runs != 0 {
		t.Errorf("a second prune pruned %+v", rep)
	}

	// By age: everything but the newest run, the newest normal run and
	// the trigger's; once the trigger is cleared, its run too.
	finishedRun(t, s, "cache", "r7", 7, false, store.RunSucceeded, "h1")
	rep, err = s.PruneResults(ctx, store.RunRetention{MaxAge: time.Hour}, at(7*time.Minute+time.Hour))
	must(t, err)
	kept(t, s, map[string]bool{"r7": true, "r6-check": false, "r5": false, "r2": true})
	must(t, s.ClearTrigger(ctx, "cache", "deploy", "restart", "h2"))
	rep, err = s.PruneResults(ctx, store.RunRetention{MaxAge: time.Hour, MaxCount: 100}, at(7*time.Minute+time.Hour))
	must(t, err)
	if rep != (store.PruneReport{Runs: 1, Results: 2}) {
		t.Errorf("after clearing the trigger pruned %+v, want r2's 2 results", rep)
	}
	kept(t, s, map[string]bool{"r7": true, "r2": false})
}

// testPruneKeepsResume: the failed run an unfinished resume resumes keeps
// its results (the resume reads them), and so does an incarnation's newest
// normal run behind newer check runs.
func testPruneKeepsResume(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1")
	must(t, s.CommitRun(ctx, create.ID, map[string]any{"created": true}, store.Snapshot{}, at(time.Second)))
	finishedRun(t, s, "cache", "b1", 1, false, store.RunSucceeded, "h1")
	finishedRun(t, s, "cache", "b2", 2, false, store.RunFailed, "h1")
	must(t, s.StartRun(ctx, store.Run{ID: "b3", Incarnation: "cache", Scenario: "deploy", ResumedFrom: "b2", KeeperID: "k1", CreatedAt: at(3 * time.Minute)}))
	must(t, s.RecordResults(ctx, []store.HostResult{hostResult("b3", 1, "h1", "ok")}))
	must(t, s.RecordRunNote(ctx, store.RunNote{RunID: "b3", Seq: 2, Path: "2", TaskName: "db only", Note: "no host"}))
	_, err := s.PruneResults(ctx, store.RunRetention{MaxCount: 1}, at(time.Hour))
	must(t, err)
	rs, err := s.ListResults(ctx, "b3")
	must(t, err)
	if len(rs) != 1 {
		t.Errorf("the unfinished resume's results: %v", rs)
	}
	kept(t, s, map[string]bool{"b2": true, "b1": false})

	// The resume fails; check runs follow: b3 stays the newest normal run.
	must(t, s.FinishRun(ctx, "b3", store.RunFailed, "", at(4*time.Minute)))
	must(t, s.Unlock(ctx, "cache"))
	finishedRun(t, s, "cache", "c1", 5, true, store.RunSucceeded, "h1")
	finishedRun(t, s, "cache", "c2", 6, true, store.RunSucceeded, "h1")
	_, err = s.PruneResults(ctx, store.RunRetention{MaxCount: 1}, at(time.Hour))
	must(t, err)
	kept(t, s, map[string]bool{"c2": true, "c1": false, "b3": true, "b2": false})
}

// testPruneTexts: a result's msg and data are stored once however many
// runs repeat them, read back intact, and the prune deletes a stored text
// once no result refers to it (also after an incarnation was deleted).
func testPruneTexts(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1")
	must(t, s.CommitRun(ctx, create.ID, map[string]any{}, store.Snapshot{}, at(time.Second)))
	row := func(run, msg string) store.HostResult {
		r := hostResult(run, 1, "h1", "ok")
		r.Msg, r.Data = msg, map[string]any{"path": "/srv/x", "size": 3.0}
		return r
	}
	for i, x := range []struct{ id, msg string }{{"a", "same"}, {"b", "same"}, {"c", "only c"}, {"d", "same"}} {
		must(t, s.StartRun(ctx, store.Run{ID: x.id, Incarnation: "cache", Scenario: "x", CreatedAt: at(time.Duration(i+1) * time.Minute)}))
		must(t, s.RecordResults(ctx, []store.HostResult{row(x.id, x.msg)}))
		must(t, s.CommitRun(ctx, x.id, map[string]any{}, store.Snapshot{}, at(time.Duration(i+1)*time.Minute+time.Second)))
	}
	got, err := s.ListResults(ctx, "b")
	must(t, err)
	diff(t, "a repeated msg and data", got, []store.HostResult{row("b", "same")})
	rep, err := s.PruneResults(ctx, store.RunRetention{MaxCount: 1}, at(time.Hour))
	must(t, err)
	// create (msg "msg"… none: no results), a, b, c pruned; "only c" is
	// unused now, "same" is d's.
	if rep.Runs != 4 || rep.Results != 3 || rep.Texts != 1 {
		t.Errorf("prune: %+v, want 4 runs, 3 results, 1 text", rep)
	}
	got, err = s.ListResults(ctx, "d")
	must(t, err)
	diff(t, "the newest run after the prune", got, []store.HostResult{row("d", "same")})

	other := newIncarnation(t, s, "redis", "other", "h2")
	must(t, s.RecordResults(ctx, []store.HostResult{row(other.ID, "other's")}))
	must(t, s.FinishRun(ctx, other.ID, store.RunFailed, "x", at(time.Minute)))
	must(t, s.Unlock(ctx, "other"))
	must(t, s.DeleteIncarnation(ctx, "other"))
	rep, err = s.PruneResults(ctx, store.RunRetention{MaxCount: 1}, at(time.Hour))
	must(t, err)
	if rep.Texts != 1 {
		t.Errorf("prune after deleting an incarnation: %+v, want its 1 text", rep)
	}
}

// runIDs lists the apply_ids of runs.
func runIDs(runs []store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// testPruneRecords: runs.keep.records deletes history entries beyond the
// bounds but never an incarnation's newest (the committed state's), then
// the run records beyond them with their results, except the newest run,
// the newest normal run, a pending trigger's run and a run a kept history
// entry names; the committed state stays.
func testPruneRecords(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1", "h2")
	must(t, s.CommitRun(ctx, create.ID, map[string]any{"created": true}, store.Snapshot{}, at(time.Second)))
	for i, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		finishedRun(t, s, "cache", id, i+1, false, store.RunSucceeded, "h1", "h2")
	}
	finishedRun(t, s, "cache", "r6-check", 6, true, store.RunSucceeded, "h1")
	must(t, s.AddTriggers(ctx, []store.PendingTrigger{{Incarnation: "cache", Scenario: "deploy", Task: "restart", SID: "h2", RunID: "r2"}}))

	rep, err := s.PruneResults(ctx, store.RunRetention{RecordMaxCount: 2}, at(time.Hour))
	must(t, err)
	// History, newest first: r5, r4 kept; r3, r2, r1, create deleted.
	// Runs: r6-check, r5 (count); r4 (history), r2 (trigger) kept.
	if rep.History != 4 || rep.Records != 3 || rep.Runs != 0 {
		t.Errorf("pruned %+v, want 4 history entries and 3 run records", rep)
	}
	runs, err := s.ListRuns(ctx, "cache", 0)
	must(t, err)
	diff(t, "runs after pruning records", runIDs(runs), []string{"r6-check", "r5", "r4", "r2"})
	for _, id := range []string{"r3", "r1", create.ID} {
		_, err := s.GetRun(ctx, id)
		wantNotFound(t, err)
		rs, err := s.ListResults(ctx, id)
		must(t, err)
		if len(rs) != 0 {
			t.Errorf("deleted run %s still has %d results", id, len(rs))
		}
	}
	hist, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	var hruns []string
	for _, h := range hist {
		hruns = append(hruns, h.RunID)
	}
	diff(t, "history after pruning records", hruns, []string{"r5", "r4"})
	inc, err := s.GetIncarnation(ctx, "cache")
	must(t, err)
	if inc.State["run"] != "r5" {
		t.Errorf("state after pruning = %v", inc.State)
	}
	if rs, _ := s.ListResults(ctx, "r4"); len(rs) != 2 {
		t.Errorf("kept run r4 has %d results, want 2", len(rs))
	}

	// By age: the newest history entry stays however old; once the
	// trigger is cleared its run goes too.
	must(t, s.ClearTrigger(ctx, "cache", "deploy", "restart", "h2"))
	rep, err = s.PruneResults(ctx, store.RunRetention{RecordMaxAge: time.Minute}, at(24*time.Hour))
	must(t, err)
	if rep.History != 1 || rep.Records != 2 {
		t.Errorf("pruned by age %+v, want 1 history entry (r4) and 2 run records (r4, r2)", rep)
	}
	runs, err = s.ListRuns(ctx, "cache", 0)
	must(t, err)
	diff(t, "runs after pruning by age", runIDs(runs), []string{"r6-check", "r5"})
	hist, err = s.ListHistory(ctx, "cache", 0)
	must(t, err)
	if len(hist) != 1 || hist[0].RunID != "r5" {
		t.Errorf("history after pruning by age = %+v, want r5's entry", hist)
	}
	rep, err = s.PruneResults(ctx, store.RunRetention{RecordMaxAge: time.Minute, RecordMaxCount: 1}, at(24*time.Hour))
	must(t, err)
	if rep.History != 0 || rep.Records != 0 {
		t.Errorf("a second prune pruned %+v", rep)
	}
}

// testRunsInRecordedOrder: run lists are in the order runs were recorded,
// not by their wall-clock times (the clock stepped back an hour between
// the two runs: the second is still the newest), and pages follow it.
func testRunsInRecordedOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1")
	must(t, s.CommitRun(ctx, create.ID, map[string]any{}, store.Snapshot{}, at(time.Second)))
	finishedRun(t, s, "cache", "before-step", 120, false, store.RunSucceeded, "h1")
	finishedRun(t, s, "cache", "after-step", 60, false, store.RunSucceeded, "h1")
	finishedRun(t, s, "cache", "later", 61, true, store.RunSucceeded, "h1")
	want := []string{"later", "after-step", "before-step", create.ID}
	runs, err := s.ListRuns(ctx, "cache", 0)
	must(t, err)
	diff(t, "ListRuns order", runIDs(runs), want)
	all, err := s.ListRuns(ctx, "", 0)
	must(t, err)
	diff(t, "ListRuns of all order", runIDs(all), want)
	var paged []string
	q := store.RunQuery{Incarnation: "cache", Limit: 1}
	for i := 0; i < 10; i++ {
		p, err := s.PageRuns(ctx, q)
		must(t, err)
		paged = append(paged, runIDs(p.Runs)...)
		if p.Next == "" {
			break
		}
		q.Before = p.Next
	}
	diff(t, "PageRuns order", paged, want)
}
