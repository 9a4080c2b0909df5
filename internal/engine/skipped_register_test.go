package engine_test

import "testing"

// TestWhenSkippedRegisterIsEmpty (SPEC §7, §17): a host on which a task
// was skipped by when: did not answer. A task skipped everywhere gives
// size(register.x) == 0 and register.x.hosts == {}, so the completeness
// idiom fails closed; the skip stays visible in the run record, and it
// still satisfies require: on that host.
func TestWhenSkippedRegisterIsEmpty(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets:
    n: "${ size(register.none) }"
    hosts: "${ register.none.hosts }"
    some: "${ size(register.some) }"
    some_hosts: "${ register.some.hosts.map(h, h) }"
tasks:
  - name: skipped everywhere
    module: core.exec.run
    register: none
    when: "false"
    params: {command: x}
  - name: skipped on b
    module: core.test.echo
    register: some
    when: soulprint.self.sid == "a"
    params: {message: hi}
  - name: nobody answered
    module: core.test.echo
    when: size(register.none) == 0 && register.none.hosts == {} && size(register.some) == 1
    params: {message: ok}
  - name: require is satisfied by a when skip
    module: core.test.echo
    require: [none]
    params: {message: ok}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}, {sid: c}]
expect:
  outcome: succeeded
  state: {n: 0, hosts: {}, some: 1, some_hosts: [a]}
  tasks:
    - {task: skipped everywhere, ran: [], skipped: [a, b, c]}
    - {task: skipped on b, ran: [a], skipped: [b, c]}
    - {task: nobody answered, ran: [a, b, c]}
    - {task: require is satisfied by a when skip, ran: [a, b, c]}
`).run()
}

// TestRegisterInsideWhenSkippedBlock (issue 37): a register whose task
// sits inside a block skipped by when: is empty, not undefined.
func TestRegisterInsideWhenSkippedBlock(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {n: "${ size(register.inner) }"}
tasks:
  - name: gated
    when: "false"
    block:
      - name: inner
        module: core.exec.run
        register: inner
        params: {command: x}
  - name: after
    module: core.test.echo
    when: size(register.inner) == 0
    params: {message: ok}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
expect:
  outcome: succeeded
  state: {n: 0}
  tasks:
    - {task: gated, skipped: [a, b]}
    - {task: after, ran: [a, b]}
`).run()
}

// TestWhenSkippedRegisterFieldSaysWhy: reading a field of a register whose
// task was skipped everywhere fails where a value is needed, saying why.
func TestWhenSkippedRegisterFieldSaysWhy(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
state_changes:
  sets: {out: "${ register.none.stdout }"}
tasks:
  - name: skipped everywhere
    module: core.exec.run
    register: none
    when: "false"
    params: {command: x}
`})
	newWorld(t, svc, "deploy", `
hosts: [{sid: a}, {sid: b}]
expect:
  outcome: failed
  error: "register.none has no result: the task was skipped on every host it targeted (skipped: when is false)"
`).run()
}
