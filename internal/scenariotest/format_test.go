package scenariotest_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/scenariotest"
)

const restartScenario = `
tasks:
  - name: probe
    module: core.exec.run
    register: role
    changed_when: false
    params: {command: role}
  - name: restart
    module: core.service.restarted
    where: register.role.stdout == "replica"
    serial: 2
    params: {name: svc}
`

func repo(tests map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"service.yml":               {Data: []byte("name: svc\n")},
		"scenario/restart/main.yml": {Data: []byte(strings.TrimLeft(restartScenario, "\n"))},
	}
	for name, body := range tests {
		fsys["scenario/restart/tests/"+name] = &fstest.MapFile{Data: []byte(strings.TrimLeft(body, "\n"))}
	}
	return fsys
}

func TestParseRejectsInvalidTests(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // "line: message part"
	}{
		{"unknown top-level key", `
hosts: [{sid: h1}]
expectations: {outcome: succeeded}
`, []string{"2: field expectations is not a key of the test file"}},
		{"a typo of a key gets a suggestion", `
hosts: [{sid: h1, covns: [a]}]
stub: []
expect: {outcome: succeeded, tasks: [{task: x, skiped: [h1]}]}
`, []string{"1: field covns is not a key of hosts[] (did you mean covens?)", "2: field stub is not a key of the test file (did you mean stubs?)", "3: field skiped is not a key of expect.tasks[] (did you mean skipped?)"}},
		{"unknown nested key with its line", `
hosts:
  - sid: h1
    coven: [a]
expect: {outcome: succeeded}
`, []string{"3: field coven is not a key of hosts[]"}},
		{"unknown key in a stub result", `
hosts: [{sid: h1}]
stubs:
  - module: core.exec.run
    result: {stdout: x, exit: 1}
expect: {outcome: succeeded}
`, []string{"4: field exit is not a key of a stub result"}},
		{"wrong outcome and status", `
hosts: [{sid: h1}]
expect: {outcome: passed, status: broken}
`, []string{`2: outcome "passed": use succeeded, failed or cancelled`, `2: status "broken": use ready or error_locked`}},
		{"hosts that do not exist", `
hosts: [{sid: h1}]
incarnation: {members: [h1, h9]}
stubs: [{module: core.exec.run, hosts: [h7]}]
expect:
  outcome: succeeded
  tasks:
    - {task: restart, waves: [[h1], [h8]]}
`, []string{"2: h9 is not a host of this test", "3: h7 is not a host of this test", "7: h8 is not a host of this test"}},
		{"tasks that do not exist", `
hosts: [{sid: h1}]
expect:
  outcome: succeeded
  tasks: [{task: restrat}]
  not_run: [nope]
`, []string{`4: scenario restart has no task "restrat"`, `5: scenario restart has no task "nope"`}},
		{"stub with two answers and an unknown module", `
hosts: [{sid: h1}]
stubs:
  - module: core.exec.runn
    unreachable: true
    result: {stdout: x}
expect: {outcome: succeeded}
`, []string{"3: unknown module core.exec.runn", "3: stubs[0]: give one of"}},
		{"duplicate and reserved hosts", `
hosts: [{sid: h1}, {sid: h1}, {sid: "@keeper"}]
expect: {outcome: succeeded}
`, []string{"1: host h1 is declared twice", "1: sid @keeper is reserved"}},
		{"no expectations", `
hosts: [{sid: h1}]
`, []string{"expect: is required"}},
		{"not YAML", "hosts: [\n", []string{"did not find expected node content"}},
		{"an unknown key and other problems: all reported", `
hosts: [{sid: h1}]
stubs: [{module: core.exec.run, hosts: [h7]}]
expect: {outcome: passed, statuss: ready}
`, []string{"2: h7 is not a host of this test", `3: field statuss is not a key of`, `3: outcome "passed"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := scenariotest.LoadFS(repo(map[string]string{"bad.yml": tc.body}))
			var ps scenariotest.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("got %v, want Problems", err)
			}
			text := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(text, "scenario/restart/tests/bad.yml:"+w) && !strings.Contains(text, w) {
					t.Errorf("problems do not say %q:\n%s", w, text)
				}
			}
			for _, p := range ps {
				if p.File != "scenario/restart/tests/bad.yml" {
					t.Errorf("problem in file %q", p.File)
				}
			}
		})
	}
}

// TestParseDuplicateKeyAlone (issue 35): a duplicate key is reported with
// its line, without "hosts: is required" or "expect: is required" for keys
// that are there.
func TestParseDuplicateKeyAlone(t *testing.T) {
	body := "hosts: [{sid: h1}]\nexpect: {outcome: succeeded}\nhosts: [{sid: h2}]\n"
	_, _, err := scenariotest.LoadFS(repo(map[string]string{"bad.yml": body}))
	var ps scenariotest.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got %v, want Problems", err)
	}
	if len(ps) != 1 || !strings.Contains(err.Error(), `bad.yml:3: mapping key "hosts" already defined at line 1`) {
		t.Fatalf("problems:\n%s\nwant only the duplicate key at line 3", err)
	}
}

func TestLoadFindsTestsAndDefaults(t *testing.T) {
	svc, tests, err := scenariotest.LoadFS(repo(map[string]string{
		"b.yml":      "hosts: [{sid: h1}]\nexpect: {outcome: succeeded}\n",
		"a.yaml":     "hosts: [{sid: h1}]\nexpect: {outcome: succeeded}\n",
		"notes.txt":  "not a test",
		"data/x.yml": "not a test either: tests are the files of tests/ itself",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 2 || tests[0].Name != "a" || tests[1].Name != "b" {
		t.Fatalf("tests = %+v", tests)
	}
	tc := tests[0]
	if tc.Scenario != "restart" || tc.Incarnation.Name != "test" || tc.File != "scenario/restart/tests/a.yaml" {
		t.Errorf("test = %+v", tc)
	}
	if svc.Manifest.Name != "svc" {
		t.Errorf("service %q", svc.Manifest.Name)
	}
}

func TestLoadReportsAnInvalidRepository(t *testing.T) {
	fsys := repo(nil)
	fsys["scenario/restart/main.yml"] = &fstest.MapFile{Data: []byte("tasks:\n  - name: x\n    module: core.nope\n")}
	_, _, err := scenariotest.LoadFS(fsys)
	var ps dsl.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got %v, want dsl.Problems", err)
	}
}
