package engine_test

import "testing"

// TestRunOnceIsFirstSIDInByteOrder (issue 35, docs/dsl.md): run_once picks
// the first host of the filtered target by SID in byte order, so x-10
// comes before x-2 (not natural order).
func TestRunOnceIsFirstSIDInByteOrder(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: once
    module: core.test.echo
    run_once: true
    params: {message: hi}
  - name: once among the filtered
    module: core.test.echo
    run_once: true
    where: soulprint.self.sid != "x-10"
    params: {message: hi}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: x-2}, {sid: x-10}, {sid: x-9}]
expect:
  outcome: succeeded
  tasks:
    - {task: once, ran: [x-10]}
    - {task: once among the filtered, ran: [x-2]}
`).run()
}
