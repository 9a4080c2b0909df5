package engine_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/scenariotest"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestEveryRunStartAndEndIsLogged (SPEC §14): a run and a check run of the
// same incarnation each log "run started" and "run ended" with their
// apply_id, status and whether they were check runs.
func TestEveryRunStartAndEndIsLogged(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/create/main.yml": `
tasks:
  - {name: ping, module: core.test.ping}
`})
	var buf testutil.Buffer
	w := newWorld(t, svc, "create", `
hosts: [{sid: a, covens: [app]}]
incarnation: {name: app, covens: [app]}
expect: {outcome: succeeded}
`, scenariotest.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	run := w.run()
	check := w.again(nil, true)
	if check.Status != "succeeded" {
		t.Fatalf("check run %s: %s", check.Status, check.Error)
	}
	lines := strings.Split(buf.String(), "\n")
	for _, c := range []struct {
		id, check string
	}{{run.ID, "false"}, {check.ID, "true"}} {
		var started, ended bool
		for _, l := range lines {
			if !strings.Contains(l, "apply_id="+c.id) {
				continue
			}
			started = started || strings.Contains(l, `msg="run started"`) && strings.Contains(l, "check="+c.check)
			ended = ended || strings.Contains(l, `msg="run ended"`) && strings.Contains(l, "status=succeeded") &&
				strings.Contains(l, "check="+c.check) && strings.Contains(l, "duration=")
		}
		if !started || !ended {
			t.Errorf("run %s (check=%s): started logged %v, ended logged %v; log:\n%s", c.id, c.check, started, ended, buf.String())
		}
	}
}
