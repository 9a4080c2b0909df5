package engine_test

import (
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/store"
)

// TestStateChangesErrorNamesItsLine: a state_changes value that fails to
// evaluate at commit is reported at its own file:line, not at the
// state_changes: key, and nothing is committed.
func TestStateChangesErrorNamesItsLine(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
input:
  n: {type: integer, default: 0}
state_changes:
  sets:
    version: "3"
    count: "${ 10 / input.n }"
tasks:
  - name: ping
    module: core.test.ping
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app], state: {version: "2"}}
expect: {outcome: failed, status: error_locked, state: {version: "2"}}
`)
	run := w.run()
	if run.Status != store.RunFailed || !strings.Contains(run.Error, "scenario/deploy/main.yml:6:12") || !strings.Contains(run.Error, "count: ") || !strings.Contains(run.Error, "division by zero") {
		t.Fatalf("run %s: %q, want the error at scenario/deploy/main.yml:6:12 naming count", run.Status, run.Error)
	}
}
