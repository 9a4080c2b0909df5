package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/soulstack/soulstack/internal/dsl"
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

// TestVarsFilesOutsideTheUnitAndWithExpressions: vars_files may name a
// file elsewhere in the repository (a group_vars-like vars/ shared by
// scenarios and destinies; a destiny's bundle carries it), and vars files
// may hold ${ } that read the host, the input and each other, rendered per
// host as Ansible evaluates a vars file's {{ }}.
func TestVarsFilesOutsideTheUnitAndWithExpressions(t *testing.T) {
	svc := loadService(t, map[string]string{
		"scenario/deploy/main.yml": `
input:
  env: {type: string, default: prod}
vars_files:
  - ../../vars/common.yml
tasks:
  - name: say
    module: core.test.echo
    params:
      message: "${ vars.url + ' ' + string(vars.workers) }"
  - name: db
    apply: {destiny: db}
`,
		"destiny/db/main.yml": `
input:
  env: {type: string, default: staging}
vars_files:
  - ../../vars/common.yml
tasks:
  - name: conf
    module: core.test.echo
    params: {message: "${ vars.url }"}
`,
		"vars/common.yml": `
url: "http://${ vars.host }:${ string(vars.port) }/${ input.env }"
host: "${ soulprint.self.sid }.example.org"
port: 8080
workers: "${ vars.port / 1000 }"
`,
	})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
expect:
  outcome: succeeded
`)
	w.run()
	var got []any
	for _, c := range w.Sim.Calls() {
		if c.Module == "core.test.echo" {
			got = append(got, c.Params["message"])
		}
	}
	want := []any{"http://a.example.org:8080/prod 8", "http://a.example.org:8080/staging"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages = %v, want %v", got, want)
	}
}

// TestVarsFilesLeavingTheRepository: a vars_files path that leaves the
// repository is refused at validation with its file:line.
func TestVarsFilesLeavingTheRepository(t *testing.T) {
	fsys := fstest.MapFS{
		"service.yml":              {Data: []byte(defaultManifest)},
		"scenario/deploy/main.yml": {Data: []byte("vars_files:\n  - ../../../etc/passwd\ntasks:\n  - {name: p, module: core.test.ping}\n")},
	}
	_, ps := dsl.LoadFS(fsys)
	probs := fmt.Sprint(ps)
	if !strings.Contains(probs, "scenario/deploy/main.yml:2:5") || !strings.Contains(probs, "stays in the repository") {
		t.Errorf("problems: %s", probs)
	}
}
