package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// testedRepo has one scenario with a passing and a failing test.
var testedRepo = map[string]string{
	"service.yml": "name: svc\n",
	"scenario/restart/main.yml": `tasks:
  - name: restart
    module: core.service.restarted
    serial: 1
    params: {name: svc}
`,
	"scenario/restart/tests/passes.yml": `hosts: [{sid: h1}, {sid: h2}]
expect:
  outcome: succeeded
  tasks: [{task: restart, waves: [[h1], [h2]]}]
`,
	"scenario/restart/tests/fails.yml": `hosts: [{sid: h1}, {sid: h2}]
stubs: [{module: core.service.restarted, hosts: [h1], result: {failed: true, msg: boom}}]
expect:
  outcome: succeeded
  tasks: [{task: restart, waves: [[h1], [h2]]}]
`,
}

func TestScenarioTest(t *testing.T) {
	dir := writeRepo(t, testedRepo)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
		not  []string
	}{
		{"a failure exits 1 with the diff", []string{"scenario", "test", dir}, 1, []string{
			"PASS restart/passes",
			"FAIL restart/fails",
			"outcome: want succeeded, got failed",
			"waves: want [[h1] [h2]], got [[h1]]",
		}, nil},
		{"--run selects tests", []string{"scenario", "test", dir, "--run", "pass"}, 0, []string{"PASS restart/passes", "ok: 1 test passed"}, []string{"fails"}},
		{"--run matching nothing is a usage error", []string{"scenario", "test", dir, "--run", "zzz"}, 2, nil, nil},
		{"a bad --run pattern", []string{"scenario", "test", dir, "--run", "("}, 2, nil, nil},
		{"no repository", []string{"scenario", "test", dir + "/nope"}, 2, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runSoulctl(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("output has %q:\n%s", n, out)
				}
			}
		})
	}
}

func TestScenarioTestInvalidFiles(t *testing.T) {
	files := map[string]string{}
	for k, v := range testedRepo {
		files[k] = v
	}
	files["scenario/restart/tests/typo.yml"] = "hosts: [{sid: h1}]\nexpect: {outcome: succeeded}\nstub: []\n"
	code, out, _ := runSoulctl(t, "scenario", "test", writeRepo(t, files))
	if code != 2 || !strings.Contains(out, "tests/typo.yml:3: field stub is not a key of the test file") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	files = map[string]string{"service.yml": "name: x\n", "scenario/a/main.yml": "tasks:\n  - module: core.nope\n"}
	code, out, _ = runSoulctl(t, "scenario", "test", writeRepo(t, files))
	if code != 2 || !strings.Contains(out, "scenario/a/main.yml:2") {
		t.Errorf("invalid repo: exit %d, output:\n%s", code, out)
	}
}

func TestScenarioTestExamples(t *testing.T) {
	for _, repo := range []string{"redis", "the-service"} {
		code, out, errs := runSoulctl(t, "scenario", "test", "../../examples/"+repo)
		if code != 0 || strings.Contains(out, "FAIL") {
			t.Errorf("%s: exit %d\n%s%s", repo, code, out, errs)
		}
	}
}

// TestScenarioTestJSON: `scenario test -o json` prints one entry per test
// on stdout (the failing one with its failures), the human lines on
// stderr, and exits 1 as the table form does.
func TestScenarioTestJSON(t *testing.T) {
	dir := writeRepo(t, testedRepo)
	code, out, errOut := runSoulctl(t, "scenario", "test", dir, "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	var rs []scenarioTestResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, out)
	}
	got := map[string]scenarioTestResult{}
	for _, r := range rs {
		got[r.Test] = r
	}
	pass, fail := got["restart/passes"], got["restart/fails"]
	if len(rs) != 2 || !pass.Passed || fail.Passed || len(fail.Failures) == 0 ||
		!strings.Contains(strings.Join(fail.Failures, "\n"), "outcome: want succeeded, got failed") ||
		!strings.HasSuffix(fail.File, "fails.yml") {
		t.Errorf("results %+v", rs)
	}
	if !strings.Contains(errOut, "FAIL restart/fails") {
		t.Errorf("stderr lacks the human lines:\n%s", errOut)
	}
}
