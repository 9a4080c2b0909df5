package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// drain closes k, which records every queued late result first.
func drain(t *testing.T, k interface {
	Close(context.Context) error
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestL5LateResultsCannotRewriteFinalRows reproduces audit finding L5: a
// member soul, after its run succeeded, sends a TaskResult for its own
// task (rewriting its row), for an attempt it was never sent, and for a
// task that does not exist. None of them is recorded.
func TestL5LateResultsCannotRewriteFinalRows(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{"version": "1"})
	d := &tap{Dispatcher: w.Sim}
	k := w.keeperProcess(d)
	id, err := k.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if run, err := k.Wait(w.ctx, id); err != nil || run.Status != store.RunSucceeded {
		t.Fatalf("run %+v %v, want succeeded", run, err)
	}
	realID := d.taskID(t, "a", "render config")
	before := w.results(id)
	forged := domain.Result{Failed: true, Msg: "rewritten by the soul"}
	k.RecordLate("a", id, realID, forged)                                       // its own final row
	k.RecordLate("a", id, strings.Replace(realID, "/a/1/", "/a/9/", 1), forged) // an attempt never sent
	k.RecordLate("a", id, id+"/42/zz/1/a/1", forged)                            // a task that does not exist
	k.RecordLate("a", id, id+"/0/0/1/a/9/AAAAAAAAAAAAAAAAAAAAAA", forged)       // a guessed MAC
	drain(t, k)
	after := w.results(id)
	if len(after) != len(before) {
		t.Fatalf("rows %d → %d: a forged late result added a row: %+v", len(before), len(after), after)
	}
	for i := range after {
		if after[i].Status != before[i].Status || after[i].Msg != before[i].Msg || after[i].Data["late"] != nil {
			t.Errorf("row %s/%s rewritten: %+v, was %+v", after[i].Path, after[i].SID, after[i], before[i])
		}
	}
}

// TestL5LateResultLandsOnce: the soul's late answer replaces the keeper's
// timeout verdict once; a second late answer for the same work does not
// replace the first.
func TestL5LateResultLandsOnce(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/migrate/main.yml": timeoutScenario})
	w := newWorld(t, svc, "migrate", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: failed}
`)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Hang: true}})
	d := &tap{Dispatcher: w.Sim}
	k := w.keeperProcess(d)
	id, err := k.StartRun(w.ctx, "test", "migrate", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	lateID := d.taskID(t, "a", "migrate")
	if run, err := k.Wait(w.ctx, id); err != nil || run.Status != store.RunFailed {
		t.Fatalf("run %+v %v, want failed", run, err)
	}
	k.RecordLate("a", id, lateID, domain.Result{Changed: true, Stdout: "3 migrations applied"})
	eventually(t, "a's late result", func() bool { return rowsOf(w.results(id), "0")["a"].Data["late"] == true })
	k.RecordLate("a", id, lateID, domain.Result{Failed: true, Stdout: "second answer"})
	drain(t, k)
	if row := rowsOf(w.results(id), "0")["a"]; row.Stdout != "3 migrations applied" || row.Status != "changed" {
		t.Fatalf("a's row = %+v, want the first late answer kept", row)
	}
}
