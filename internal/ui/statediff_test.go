package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// The incarnation page's history shows, per snapshot, what changed in
// the state since the one before: each key added, changed or removed with
// its values before and after.
func TestHistoryStateDiff(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.st.CreateIncarnation(ctx, store.Incarnation{Name: "hist", Service: "redis", Ref: "v1.2.0", Commit: commit},
		store.Run{ID: "hist-1", Scenario: "create", CreatedAt: e.now.Add(-time.Hour)}))
	must(e.st.CommitRun(ctx, "hist-1", map[string]any{"port": 6379, "mode": "single", "peers": []any{"a"}}, store.Snapshot{}, e.now.Add(-time.Hour)))
	must(e.st.StartRun(ctx, store.Run{ID: "hist-2", Incarnation: "hist", Scenario: "scale", CreatedAt: e.now.Add(-time.Minute)}))
	must(e.st.CommitRun(ctx, "hist-2", map[string]any{"port": 6380, "peers": []any{"a"}, "sentinel": true}, store.Snapshot{}, e.now))

	body := e.page(e.session(), "/ui/incarnations/hist")
	contains(t, "history diff", body,
		// the scale run: port changed, mode removed, sentinel added, peers unchanged
		`<tr class="sd-changed" data-key="port"><td><code>port</code></td><td><code class="d-del">6379</code></td><td><code class="d-add">6380</code></td></tr>`,
		`<tr class="sd-removed" data-key="mode"><td><code>mode</code></td><td><code class="d-del">&#34;single&#34;</code></td><td><span class="muted">removed</span></td></tr>`,
		`<tr class="sd-added" data-key="sentinel"><td><code>sentinel</code></td><td><span class="muted">—</span></td><td><code class="d-add">true</code></td></tr>`,
		// the create: everything added from the empty state
		`<tr class="sd-added" data-key="peers"><td><code>peers</code></td><td><span class="muted">—</span></td><td><code class="d-add">[&#34;a&#34;]</code></td></tr>`,
	)
	if n := strings.Count(body, `data-key="peers"`); n != 1 {
		t.Errorf("peers listed %d times, want once (unchanged by the scale run)", n)
	}
}
