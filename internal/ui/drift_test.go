package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// TestDriftAndResumeInTheUI: the locked incarnation offers to resume its
// failed run; the last drift report shows as a badge on the incarnation
// and the dashboard, with each drifted host's diff; a resumed run links
// the run it resumes.
func TestDriftAndResumeInTheUI(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	d := e.page(c, "/ui/incarnations/cache")
	contains(t, "locked incarnation", d, `id="resume-hint">soulctl run resume `+runRestart+` --reason …`, "Never checked")
	lacks(t, "unchecked incarnation", d, `id="drift-badge"`)

	ctx := context.Background()
	if err := e.st.PutDriftReport(ctx, "cache", store.DriftReport{RunID: runCreate, Scenario: "create", Drifted: true, Tasks: 1, CheckedAt: e.now,
		Hosts: map[string]store.DriftHost{
			"web-1.example": {Status: store.DriftDrifted, Tasks: []store.DriftTask{{Path: "0", Task: "redis.conf", Diff: "-maxmemory 1gb\n+maxmemory 2gb"}}},
			"web-2.example": {Status: store.DriftClean},
			"db-1.example":  {Status: store.DriftUnknown, Msg: `unreachable (in "redis.conf"): drift unknown`},
		}}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetDriftSchedule(ctx, "cache", &store.DriftSchedule{Scenario: "create", Every: 6 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	d = e.page(c, "/ui/incarnations/cache")
	contains(t, "drifted incarnation", d,
		`<a href="#drift" class="badge st-drifted" id="drift-badge">drifted</a>`,
		"Checked every 6h0m0s (scenario create)", "1 task would change",
		`<summary>redis.conf</summary><pre class="diff">-maxmemory 1gb`+"\n"+`&#43;maxmemory 2gb</pre>`,
		`<span class="badge st-clean">clean</span>`, `<span class="badge st-unknown">unknown</span>`, "drift unknown")
	contains(t, "dashboard", e.page(c, "/ui/"), `id="drifted"`, `<a href="/ui/incarnations/cache#drift">cache</a>`)

	// A resume links back.
	if err := e.st.Unlock(ctx, "cache"); err != nil {
		t.Fatal(err)
	}
	if err := e.st.FinishRun(ctx, runQueue, store.RunFailed, "x", e.now); err != nil {
		t.Fatal(err)
	}
	run := store.Run{ID: "33333333-0000-4000-8000-000000000001", Incarnation: "queue", Scenario: "deploy", ResumedFrom: runQueue, CreatedAt: e.now}
	if err := e.st.StartRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	contains(t, "resumed run", e.page(c, "/ui/runs/"+run.ID), `id="resumed-from"><code>`+runQueue+`</code>`)
}
