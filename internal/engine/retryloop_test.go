package engine_test

import (
	"strings"
	"testing"
)

// TestExhaustedUntilFailsTheTask (SPEC §5 decision, issue 13 item 3): a
// health gate whose until never held after count attempts fails the task
// on that host — the rollout stops there and nothing later runs — unless
// failed_when: decides, which then decides alone.
func TestExhaustedUntilFailsTheTask(t *testing.T) {
	gate := `
tasks:
  - name: rolling
    serial: 1
    block:
      - name: gate
        module: core.exec.run
        changed_when: false
        retry: {count: 3, delay: 5s, until: 'contains(register.self.stdout, "status:ok")'}
%s        params: {command: health}
  - name: after
    module: core.test.ping
`
	t.Run("without failed_when the task fails", func(t *testing.T) {
		svc := loadService(t, map[string]string{"scenario/deploy/main.yml": strings.Replace(gate, "%s", "", 1)})
		w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
stubs:
  - {module: core.exec.run, hosts: [a], result: {stdout: "status:starting"}}
  - {module: core.exec.run, result: {stdout: "status:ok"}}
expect:
  outcome: failed
  error: "until never held after 3 attempts"
  status: error_locked
  tasks:
    - {task: rolling, waves: [[a]], failed: [a]}
    - {task: gate, ran: [a], failed: [a]}
  not_run: [after]
`)
		w.run()
		if n := len(callsTo(w.Sim.Calls(), "gate")["a"]); n != 3 {
			t.Errorf("the gate made %d attempts on a, want 3", n)
		}
		if n := len(callsTo(w.Sim.Calls(), "gate")["b"]); n != 0 {
			t.Errorf("the gate ran on b (%d calls) after a's wave failed", n)
		}
	})
	t.Run("failed_when decides alone", func(t *testing.T) {
		svc := loadService(t, map[string]string{"scenario/deploy/main.yml": strings.Replace(gate, "%s", "        failed_when: 'register.self.rc != 0'\n", 1)})
		newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
stubs:
  - {module: core.exec.run, hosts: [a], result: {stdout: "status:starting"}}
  - {module: core.exec.run, result: {stdout: "status:ok"}}
expect:
  outcome: succeeded
  tasks:
    - {task: gate, ran: [a, b], failed: []}
    - {task: after, ran: [a, b]}
`).run()
	})
}

// TestLoopVarsReadingItemFinalize (issue 13 item 6): a loop task whose
// vars: read item runs every item and then finalizes — changed_when and
// failed_when are applied after the loop without re-rendering vars that
// need an item.
func TestLoopVarsReadingItemFinalize(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: each
    module: core.test.echo
    register: each
    loop: [a, b]
    vars: {label: "${ item }-x", fixed: "y"}
    changed_when: vars.fixed == "y"
    failed_when: size(register.self.results) != 2
    params: {message: "${ vars.label }"}
  - name: after
    module: core.test.ping
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: h1}, {sid: h2}]
expect:
  outcome: succeeded
  tasks:
    - {task: each, ran: [h1, h2], failed: [], changed: [h1, h2]}
    - {task: after, ran: [h1, h2]}
`)
	w.run()
	for sid, calls := range callsTo(w.Sim.Calls(), "each") {
		var got []string
		for _, c := range calls {
			got = append(got, c.Params["message"].(string))
		}
		if strings.Join(got, ",") != "a-x,b-x" {
			t.Errorf("%s: messages %v, want [a-x b-x]", sid, got)
		}
	}
}

// TestMapsIterateInYAMLOrder (issue 37; SPEC §9, issue 13 item 7): loop:
// over a map, a CEL comprehension over it and keys() (Ansible's
// dict2items) see the keys in the order the YAML wrote them, as Ansible's
// insertion-ordered dicts do, identically on every host and every run; a
// computed map whose keys the YAML never wrote iterates sorted.
func TestMapsIterateInYAMLOrder(t *testing.T) {
	svc := loadService(t, map[string]string{
		"essence/_default.yaml": "users: {zoe: 6, mia: 3, ann: 1, kim: 4, bob: 2, tom: 5, lea: 7, dan: 8}\n",
		"scenario/deploy/main.yml": `
tasks:
  - name: each user
    module: core.test.echo
    loop: "${ essence.users }"
    params: {message: "${ item.key }=${ item.value }"}
  - name: names
    module: core.test.echo
    params: {message: "${ join(essence.users.map(k, k), \",\") }"}
  - name: dict2items
    module: core.test.echo
    params: {message: "${ join(keys(essence.users).map(k, k + '=' + string(essence.users[k])), \",\") }"}
  - name: computed
    module: core.test.echo
    params: {message: "${ join(merge(essence.users, {'abe': 0}).map(k, k), \",\") }"}
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: h1}, {sid: h2}, {sid: h3}]
expect:
  outcome: succeeded
`)
	const wantLoop = "zoe=6,mia=3,ann=1,kim=4,bob=2,tom=5,lea=7,dan=8"
	const wantNames = "zoe,mia,ann,kim,bob,tom,lea,dan"
	const wantComputed = "abe,ann,bob,dan,kim,lea,mia,tom,zoe"
	w.run()
	for run := range 2 { // every run, not only the first
		if run > 0 {
			if r := w.again(nil, false); r.Status != "succeeded" {
				t.Fatalf("second run: %s %s", r.Status, r.Error)
			}
		}
		calls := w.Sim.Calls()
		loops := callsTo(calls, "each user")
		for _, sid := range []string{"h1", "h2", "h3"} {
			var got []string
			for _, c := range loops[sid] {
				got = append(got, c.Params["message"].(string))
			}
			// Calls accumulate across runs: each run's 8 items in order.
			if len(got) != 8*(run+1) {
				t.Fatalf("%s: %d loop items after run %d", sid, len(got), run+1)
			}
			for i := 0; i+8 <= len(got); i += 8 {
				if s := strings.Join(got[i:i+8], ","); s != wantLoop {
					t.Errorf("%s: loop order %s, want %s", sid, s, wantLoop)
				}
			}
			for task, want := range map[string]string{"names": wantNames, "dict2items": wantLoop, "computed": wantComputed} {
				cs := callsTo(calls, task)[sid]
				if len(cs) == 0 {
					t.Fatalf("%s: no call of %s", sid, task)
				}
				for _, c := range cs {
					if c.Params["message"] != want {
						t.Errorf("%s: %s order %v, want %s", sid, task, c.Params["message"], want)
					}
				}
			}
		}
	}
}
