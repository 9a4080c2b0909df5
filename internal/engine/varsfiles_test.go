package engine_test

import (
	"strings"
	"testing"
)

// TestVarsFilesFirstFoundPerHost: scenario vars_files resolve per host
// (the distribution's file, else the family's), task vars_files win over
// them and the task's vars: over both; a host for which no alternative
// exists fails with the entry's position and the paths tried, the others
// go on.
func TestVarsFilesFirstFoundPerHost(t *testing.T) {
	svc := loadService(t, map[string]string{
		"scenario/deploy/main.yml": `
vars_files:
  - ["vars/${ soulprint.self.os.distribution }.yml", "vars/${ soulprint.self.os.family }.yml"]
tasks:
  - name: say
    module: core.test.echo
    vars_files:
      - ["extra/${ soulprint.self.sid }.yml", extra/all.yml]
    vars:
      suffix: "${ vars.port + 1 }"
    params:
      message: "${ vars.greeting + ' ' + vars.who + ' ' + string(vars.suffix) }"
`,
		"scenario/deploy/vars/ubuntu.yml": "greeting: hello\nport: 80\n",
		"scenario/deploy/vars/redhat.yml": "greeting: hi\nport: 8080\n",
		"scenario/deploy/extra/all.yml":   "who: everyone\n",
		"scenario/deploy/extra/a.yml":     "who: a-only\ngreeting: howdy\n",
	})
	w := newWorld(t, svc, "deploy", `
hosts:
  - {sid: a, facts: {os: {distribution: ubuntu, family: debian}}}
  - {sid: b, facts: {os: {distribution: rocky, family: redhat}}}
  - {sid: c, facts: {os: {distribution: arch, family: arch}}}
expect:
  outcome: failed
  tasks:
    - {task: say, changed: [], failed: [c]}
`)
	run := w.run()
	got := map[string]any{}
	for _, c := range w.Sim.Calls() {
		if c.Task == "say" {
			got[c.SID] = c.Params["message"]
		}
	}
	if got["a"] != "howdy a-only 81" || got["b"] != "hi everyone 8081" || got["c"] != nil {
		t.Errorf("messages = %v", got)
	}
	rows := rowsOf(w.results(run.ID), "0")
	if msg := rows["c"].Msg; !strings.Contains(msg, "vars_files (scenario/deploy/main.yml:2:5): none of vars/arch.yml, vars/arch.yml exists for this host") {
		t.Errorf("c: %q", msg)
	}
}
