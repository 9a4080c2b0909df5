package engine_test

import (
	"testing"

	"github.com/soulstack/soulstack/internal/scenariotest"
)

// TestLoopItemLimit (SPEC §17, issue 35): a computed loop: longer than
// runs.max_loop_items fails the task before any item runs, on the keeper
// and on souls alike, with a message naming the limit and the setting.
func TestLoopItemLimit(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
input:
  s: {type: string, default: abcdef}
tasks:
  - name: on keeper
    on: keeper
    module: core.test.echo
    loop: "${ split(input.s, '') }"
    params: {message: "${ item }"}
`, "scenario/souls/main.yml": `
input:
  s: {type: string, default: abcdef}
tasks:
  - name: per host
    module: core.test.echo
    loop: "${ split(input.s, '') }"
    params: {message: "${ item }"}
  - name: within the limit
    module: core.test.echo
    loop: "${ split('abc', '') }"
    params: {message: "${ item }"}
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
expect:
  outcome: failed
  error: "loop: 6 items, more than the limit of 5 per task (runs.max_loop_items in keeper.yaml)"
`, scenariotest.Options{MaxLoopItems: 5})
	w.run()
	if calls := w.Sim.Calls(); len(calls) != 0 {
		t.Fatalf("%d module calls ran, want none", len(calls))
	}
	newWorld(t, svc, "souls", `
hosts: [{sid: a}, {sid: b}]
expect:
  outcome: failed
  error: "loop: 6 items, more than the limit of 5 per task"
  tasks:
    - {task: per host, failed: [a, b]}
`, scenariotest.Options{MaxLoopItems: 5}).run()
	newWorld(t, svc, "souls", `
hosts: [{sid: a}]
input: {s: abcde}
expect:
  outcome: succeeded
`, scenariotest.Options{MaxLoopItems: 5}).run()
}
