package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/scenariotest"
	"github.com/soulstack/soulstack/internal/store"
)

const triggerScenario = `
tasks:
  - name: write config
    module: core.file.present
    register: conf
    params: {path: /etc/app.conf, content: v2}
  - name: verify
    module: core.test.ping
  - name: restart app
    module: core.service.restarted
    onchanges: [conf]
    params: {name: app}
`

// TestPendingTriggersAcrossRuns is SPEC §8.3's decision: the config was
// rewritten, the run failed before the restart, the rerun sees no change —
// and still restarts, exactly once.
func TestPendingTriggersAcrossRuns(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": triggerScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}, {sid: c}]
stubs:
  - {module: core.file.present, hosts: [a, b], result: {changed: true}}
  - {module: core.test.ping, hosts: [b], result: {failed: true, msg: unhealthy}}
expect:
  outcome: failed
  not_run: [restart app]
  triggers:
    - {task: restart app, sid: a}
    - {task: restart app, sid: b}
`)
	w.run()

	// The rerun: nothing changes any more, the check passes; the restart
	// is still owed to a and b (not c, whose config never changed).
	w.unlock()
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.service.restarted", Results: []domain.Result{{Changed: true}}}})
	run := w.again(nil, false)
	if run.Status != store.RunSucceeded {
		t.Fatalf("rerun %s: %s", run.Status, run.Error)
	}
	rows := rowsOf(w.results(run.ID), "2")
	for sid, want := range map[string]string{"a": "changed", "b": "changed", "c": "skipped"} {
		if rows[sid].Status != want {
			t.Errorf("restart on %s: %s, want %s", sid, rows[sid].Status, want)
		}
	}
	// The restart says why it ran: the run that left it owed.
	trs0, _ := w.Store.ListRuns(w.ctx, "test", 0)
	var failedRun string
	for _, r := range trs0 {
		if r.Status == store.RunFailed {
			failedRun = r.ID
		}
	}
	for _, sid := range []string{"a", "b"} {
		if rows[sid].Data["owed_since"] != failedRun || !strings.Contains(rows[sid].Msg, "owed since run "+failedRun) {
			t.Errorf("restart on %s does not say it was owed since %s: %q %v", sid, failedRun, rows[sid].Msg, rows[sid].Data)
		}
	}
	trs, err := w.Store.ListTriggers(w.ctx, "test", "deploy")
	if err != nil || len(trs) != 0 {
		t.Fatalf("triggers after the handler succeeded: %v %v", trs, err)
	}

	// Once served, the trigger is gone: the next idle run restarts nothing.
	run = w.again(nil, false)
	for sid, r := range rowsOf(w.results(run.ID), "2") {
		if r.Status != "skipped" {
			t.Errorf("third run restarted %s", sid)
		}
	}
}

func TestPendingTriggerKeptWhileHandlerFails(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": triggerScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
incarnation:
  triggers: [{task: restart app, sid: a}]
stubs:
  - {module: core.service.restarted, result: {failed: true, msg: "unit not found"}}
expect:
  outcome: failed
  tasks: [{task: restart app, failed: [a]}]
  triggers: [{task: restart app, sid: a}]
`)
	w.run()
	// A check run fires the owed handler (reporting what it would do) but
	// neither clears nor adds triggers.
	w.unlock()
	w.Sim.SetStubs(nil)
	run := w.again(nil, true)
	if r := rowsOf(w.results(run.ID), "2")["a"]; r.Status != "ok" {
		t.Errorf("check run: owed restart %s, want it run", r.Status)
	}
	if trs, _ := w.Store.ListTriggers(w.ctx, "test", "deploy"); len(trs) != 1 {
		t.Errorf("check run touched the triggers: %v", trs)
	}
}

func TestOnfailHandlersRunOnFailedHostsOnly(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: migrate
    module: core.test.ping
    register: mig
  - name: next step
    module: core.test.ping
  - name: page the on-call
    module: core.test.echo
    onfail: [mig]
    params: {message: "migration failed on ${ soulprint.self.sid }"}
  - name: cleanup block
    block:
      - name: roll back
        module: core.test.echo
        onfail: [mig]
        params: {message: rollback}
      - name: not a handler
        module: core.test.ping
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}, {sid: c}]
stubs:
  - {module: core.test.ping, task: migrate, hosts: [b], result: {failed: true, msg: "lock timeout"}}
  - {module: core.test.ping, task: migrate, hosts: [c], unreachable: true}
expect:
  outcome: failed
  error: 'task "migrate" failed on b: lock timeout'
  status: error_locked
  tasks:
    - {task: migrate, failed: [b], unreachable: [c]}
    - {task: page the on-call, ran: [b], skipped: [a]}
    - {task: roll back, ran: [b], skipped: [a]}
  not_run: [next step, not a handler]
`).run()
}

func TestRequireAndLoopAndRetry(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: only on primary
    module: core.test.ping
    register: prim
    where: soulprint.self.role == "primary"
  - name: needs primary
    module: core.test.ping
    require: [prim]
  - name: users
    module: core.test.echo
    register: users
    loop: ["alice", "bob", "${ soulprint.self.sid }"]
    params: {message: "user ${ item } #${ loop_index }"}
  - name: wait ready
    module: core.exec.run
    register: ready
    changed_when: false
    retry: {count: 5, delay: 10s, until: 'register.self.stdout == "ready"'}
    params: {command: status}
`})
	w := newWorld(t, svc, "deploy", `
hosts:
  - {sid: a, facts: {role: primary}}
  - {sid: b, facts: {role: replica}}
stubs:
  - module: core.exec.run
    results: [{stdout: starting}, {stdout: starting}, {stdout: ready}]
expect:
  outcome: succeeded
  tasks:
    - {task: only on primary, ran: [a]}
    - {task: needs primary, ran: [a], skipped: [b]}
    - {task: users, ran: [a, b]}
    - {task: wait ready, ran: [a, b], failed: []}
`)
	run := w.run()
	calls := callsTo(w.Sim.Calls(), "users")
	if len(calls["b"]) != 3 || calls["b"][2].Params["message"] != "user b #2" {
		t.Errorf("loop calls on b: %+v", calls["b"])
	}
	users := rowsOf(w.results(run.ID), "2")["a"]
	if items, _ := users.Data["results"].([]any); len(items) != 3 {
		t.Errorf("stored loop results: %v", users.Data)
	}
	if n := len(callsTo(w.Sim.Calls(), "wait ready")["a"]); n != 3 {
		t.Errorf("retry made %d attempts, want 3 (until ready)", n)
	}
}

func TestRegisterInStateChanges(t *testing.T) {
	for _, tc := range []struct {
		name, task, test string
	}{
		{"run_once resolves", "    run_once: true\n", `
hosts: [{sid: a}, {sid: b}]
stubs: [{module: core.exec.run, result: {stdout: a.example}}]
expect: {outcome: succeeded, state: {leader: a.example}}
`},
		{"several hosts are ambiguous", "", `
hosts: [{sid: a}, {sid: b}]
stubs: [{module: core.exec.run, result: {stdout: x}}]
expect:
  outcome: failed
  error: 'register.elect.hosts["<sid>"]'
  status: error_locked
  state: {}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := loadService(t, map[string]string{"scenario/elect/main.yml": `
state_changes:
  sets: {leader: "${ register.elect.stdout }"}
tasks:
  - name: elect
    module: core.exec.run
    register: elect
    changed_when: false
` + tc.task + `    params: {command: hostname}
`})
			newWorld(t, svc, "elect", tc.test).run()
		})
	}
}

func TestSecretsAreMasked(t *testing.T) {
	const secret = "hunter2-very-secret"
	svc := loadService(t, map[string]string{
		"scenario/deploy/main.yml": `
input:
  password: {type: string, secret: true, required: true}
  user: {type: string, default: app}
state_changes:
  sets: {leader: "${ input.user }"}
tasks:
  - name: set password
    module: core.exec.run
    register: pw
    params: {command: "chpasswd ${ input.user }:${ input.password }"}
  - name: db
    apply:
      destiny: db
      input: {token: "tok-${ input.user }-42"}
  - name: fail loudly
    module: core.test.fail
    params: {message: "bad password ${ input.password }"}
`,
		"destiny/db/main.yml": `
input:
  token: {type: string, secret: true}
tasks:
  - name: connect
    module: core.test.echo
    params: {message: "${ input.token }"}
output:
  dsn: "db://${ input.token }@host"
`,
	})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
input: {password: `+secret+`}
stubs:
  - {module: core.exec.run, result: {changed: true, stdout: "set `+secret+`", stderr: "echo `+secret+`"}}
  - {module: core.test.echo, result: {stdout: "tok-app-42"}}
  - {module: core.test.fail, result: {failed: true, msg: "bad password `+secret+`"}}
expect: {outcome: failed}
`)
	id := w.start()
	events, stop := w.Engine.Subscribe(id)
	defer stop()
	run := w.wait(id)
	var seen []string
	for ev := range events {
		b, _ := json.Marshal(ev)
		seen = append(seen, string(b))
	}
	stored, _ := json.Marshal(struct {
		Run     store.Run
		Results []store.HostResult
		Inc     store.Incarnation
	}{run, w.results(id), w.incarnation()})
	for what, text := range map[string]string{"stored run, results and incarnation": string(stored), "events": strings.Join(seen, "\n")} {
		for _, s := range []string{secret, "tok-app-42"} {
			if strings.Contains(text, s) {
				t.Errorf("%s leak a secret %q:\n%s", what, s, text)
			}
		}
	}
	hist, _ := w.Store.ListHistory(w.ctx, "test", 0)
	if b, _ := json.Marshal(hist); strings.Contains(string(b), secret) {
		t.Errorf("history leaks the secret: %s", b)
	}
	if run.Input["password"] != "****" || run.Input["user"] != "app" {
		t.Errorf("run input = %v, want the password masked only", run.Input)
	}
	if !strings.Contains(string(stored), "db://****@host") {
		t.Errorf("the destiny output is not recorded masked: %s", stored)
	}
	// The hosts got the real values.
	if c := callsTo(w.Sim.Calls(), "set password")["a"]; len(c) != 1 || !strings.Contains(c[0].Params["command"].(string), secret) {
		t.Errorf("the module did not get the secret: %+v", c)
	}
}

func TestOutputIsCapped(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/chatty/main.yml": `
tasks:
  - {name: chatty, module: core.exec.run, register: out, params: {command: yes}}
`})
	big := strings.Repeat("y\n", 50_000) + "the end"
	w := newWorld(t, svc, "chatty", `
hosts: [{sid: a}]
stubs: [{module: core.exec.run, result: {stdout: x}}]
expect: {outcome: succeeded}
`, scenariotest.Options{OutputCap: 1000})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.exec.run", Results: []domain.Result{{Stdout: big, Stderr: "short"}}}})
	run := w.wait(w.start())
	r := rowsOf(w.results(run.ID), "0")["a"]
	if len(r.Stdout) > 1100 || !strings.HasSuffix(r.Stdout, "the end") || !strings.Contains(r.Stdout, "bytes truncated") {
		t.Errorf("stored stdout: %d bytes, ends %q", len(r.Stdout), r.Stdout[max(0, len(r.Stdout)-20):])
	}
	if r.Stderr != "short" {
		t.Errorf("stderr = %q", r.Stderr)
	}
	if tr, _ := r.Data["truncated"].([]any); len(tr) != 1 || tr[0] != "stdout" {
		t.Errorf("truncated = %v, want [stdout]", r.Data["truncated"])
	}
}

func TestUnreachableHostLeavesTheRunUncommittable(t *testing.T) {
	// Without the completeness check the next step acts on the hosts that
	// answered — exactly why the idiom exists — and the run still cannot
	// commit.
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {version: "2"}
tasks:
  - name: probe
    module: core.exec.run
    register: role
    changed_when: false
    params: {command: role}
  - name: act
    module: core.test.ping
    where: register.role.stdout == "replica"
  - name: handler
    module: core.test.ping
    onfail: [role]
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}, {sid: c}]
incarnation: {state: {version: "1"}}
stubs:
  - {module: core.exec.run, hosts: [c], unreachable: true}
  - {module: core.exec.run, result: {stdout: replica}}
expect:
  outcome: failed
  error: "unreachable: c"
  status: error_locked
  state: {version: "1"}
  tasks:
    - {task: probe, ran: [a, b], unreachable: [c]}
    - {task: act, ran: [a, b]}
    - {task: handler, ran: [], skipped: [a, b]}
`).run()
}

func TestApplyShipsTheDestinyAndRegistersItsOutput(t *testing.T) {
	svc := loadService(t, map[string]string{
		"scenario/deploy/main.yml": `
input:
  port: {type: integer, default: 6379}
state_changes:
  sets: {version: "${ register.inst.output.version }"}
tasks:
  - name: install
    register: inst
    run_once: true
    apply:
      destiny: app
      input: {port: "${ input.port }", host: "${ soulprint.self.sid }"}
  - name: bad input
    when: input.port == 1
    apply:
      destiny: app
      input: {port: "${ default(string(input.port), 0) }", host: x}
`,
		"destiny/app/main.yml": `
input:
  port: {type: integer, required: true}
  host: {type: string, required: true}
tasks:
  - name: conf
    module: core.file.present
    register: conf
    params: {path: /etc/app.conf, content: "port ${ input.port }"}
output:
  version: "v-${ input.host }-${ essence.flavor }"
  changed: "${ register.conf.changed }"
`,
		"essence/_default.yaml": "flavor: vanilla\n",
	})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
essence: {flavor: mint}
stubs: [{module: core.file.present, result: {changed: true}}]
expect:
  outcome: succeeded
  state: {version: v-a-mint}
  tasks:
    - {task: install, ran: [a], changed: [a]}
    - {task: bad input, skipped: [a, b]}
`)
	run := w.run()
	b := callsTo(w.Sim.Calls(), "install")["a"]
	if len(b) != 2 || b[0].Destiny != "app" || b[0].Input["port"] != int64(6379) {
		t.Errorf("install calls on a: %+v", b)
	}
	r := rowsOf(w.results(run.ID), "0")["a"]
	if out, _ := r.Data["output"].(map[string]any); out["changed"] != true {
		t.Errorf("stored output = %v", r.Data["output"])
	}

	// Input that does not match the destiny's declaration fails on the
	// keeper, before anything is shipped.
	run = w.again(map[string]any{"port": 1}, false)
	if run.Status != store.RunFailed || !strings.Contains(run.Error, "apply.input of destiny app") {
		t.Errorf("bad input run: %s %q", run.Status, run.Error)
	}
}

func TestWhereThatCannotBeEvaluatedFailsTheTask(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: act
    module: core.test.ping
    where: soulprint.self.missing.deep == "x"
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
expect:
  outcome: failed
  error: "where:"
  tasks: [{task: act, failed: [a]}]
`).run()
}

func TestOnKeeperRunsInTheKeeper(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {leader: "${ register.api.stdout }"}
tasks:
  - name: ask the api
    on: keeper
    module: core.http.request
    register: api
    params: {url: "http://inventory.example/leader"}
  - name: on hosts
    module: core.test.ping
    when: register.api.stdout == "a"
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
stubs: [{module: core.http.request, hosts: ["@keeper"], result: {stdout: a}}]
expect:
  outcome: succeeded
  state: {leader: a}
  tasks:
    - {task: ask the api, ran: ["@keeper"]}
    - {task: on hosts, ran: [a, b]}
`).run()
}

func TestSecretsAreNeverCommitted(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
input:
  password: {type: string, secret: true}
state_changes:
  sets: {leader: "admin:${ input.password }"}
tasks:
  - {name: ping, module: core.test.ping}
`})
	// SPEC §10.2: a value computed from a secret is never committed (it
	// used to be committed masked); the run is refused at start.
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
input: {password: pa55word-xyz}
expect: {outcome: succeeded}
`)
	_, err := w.Start(w.ctx)
	if err == nil || !strings.Contains(err.Error(), "leader is computed from a secret") || !strings.Contains(err.Error(), "main.yml:") {
		t.Fatalf("start: %v", err)
	}
}

// TestEmptyRegisterIsAValue (SPEC §7 decision): a registered task filtered
// out everywhere gives size(register.x) == 0 and register.x.hosts == {},
// for the seed's probe idiom and for state_changes.
func TestEmptyRegisterIsAValue(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {n: "${ size(register.none) }", hosts: "${ register.none.hosts }"}
tasks:
  - name: nowhere
    module: core.exec.run
    register: none
    where: "false"
    params: {command: x}
  - name: probe idiom
    module: core.test.echo
    when: size(register.none) < incarnation.host_count && register.none.hosts == {}
    params: {message: ok}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
expect:
  outcome: succeeded
  state: {n: 0, hosts: {}}
  tasks:
    - {task: nowhere, ran: []}
    - {task: probe idiom, ran: [a, b]}
`).run()
}

// TestEmptyRegisterFieldNamesTheTask: reading a field of an empty register
// where a value is needed fails, naming the task and why it has no result.
func TestEmptyRegisterFieldNamesTheTask(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {out: "${ register.none.stdout }"}
tasks:
  - name: nowhere
    module: core.exec.run
    register: none
    where: "false"
    params: {command: x}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}]
expect:
  outcome: failed
  error: "register.none has no result: task \"nowhere\" ran on no host"
  tasks:
    - {task: nowhere, ran: []}
`).run()
}

// TestEmptyProbeInWhere: the seed's probe idiom when the probe ran on no
// host (on: matched no member): its completeness check had no host to
// fail on, so the where: that reads the probe's field is where a value is
// needed — the run fails there, naming the probe and why it has no
// result, and nothing is committed.
func TestEmptyProbeInWhere(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {done: true}
tasks:
  - name: probe
    module: core.exec.run
    register: role
    changed_when: false
    on: [db]
    failed_when: size(register.role) < incarnation.host_count
    params: {command: role}
  - name: replicas
    module: core.test.ping
    where: register.role.stdout == "replica"
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod]}, {sid: b, covens: [prod]}, {sid: c, covens: [db]}]
incarnation: {covens: [prod]}
expect:
  outcome: failed
  error: 'where: could not be evaluated on a, b: evaluating "register.role.stdout == \"replica\"": register.role has no result: task "probe" ran on no host: on: [db] matched no member of this incarnation'
  state: {}
  tasks:
    - {task: probe, ran: []}
    - {task: replicas, failed: [a, b]}
`).run()
}
