package engine_test

import (
	"testing"
)

// A check run through apply: reports what the destiny's tasks report: a
// command that would run is unknown (counted apart, as at top level), not
// "ok, no change" — the real run then changes the host.
func TestCheckModeThroughApplyReportsUnknown(t *testing.T) {
	svc := loadService(t, map[string]string{
		"scenario/deploy/main.yml": `
tasks:
  - name: db
    apply: {destiny: db}
  - name: looped
    loop: [1, 2]
    apply: {destiny: db}
  - name: files only
    apply: {destiny: files}
  - name: mixed
    apply: {destiny: mixed}
  - name: looped command
    loop: [1, 2]
    module: core.exec.run
    params: {command: "migrate ${ item }"}
  - name: grouped
    block:
      - {name: inner, apply: {destiny: db}}
`,
		"destiny/db/main.yml": `
tasks:
  - name: migrate
    module: core.exec.run
    params: {command: "migrate --all"}
`,
		"destiny/files/main.yml": `
tasks:
  - name: config
    module: core.file.present
    params: {path: /etc/app.conf, content: v2}
`,
		"destiny/mixed/main.yml": `
tasks:
  - name: config
    module: core.file.present
    params: {path: /etc/app.conf, content: v2}
  - name: migrate
    module: core.exec.run
    params: {command: "migrate --all"}
`,
	})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
check: true
stubs:
  - {module: core.file.present, result: {changed: true}}
expect:
  outcome: succeeded
  tasks:
    - {task: db, unknown: [a]}
    - {task: looped, unknown: [a]}
    - {task: files only, changed: [a]}
    - {task: mixed, unknown: [a]}
    - {task: looped command, unknown: [a]}
    - {task: grouped, unknown: [a]}
`)
	run := w.run()
	for _, c := range w.Sim.Calls() {
		if c.Module == "core.exec.run" {
			t.Errorf("a command ran in check mode through apply: %+v", c)
		}
	}
	rows := rowsOf(w.results(run.ID), "0")
	if st := rows["a"].Status; st != "unknown" {
		t.Errorf("apply of a destiny with a command: status %q, want unknown", st)
	}
	// The destiny's own task rows say which task is unknown.
	tasks, _ := rows["a"].Data["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["status"] != "unknown" {
		t.Errorf("the destiny's task results: %v, want migrate unknown", rows["a"].Data)
	}
}
