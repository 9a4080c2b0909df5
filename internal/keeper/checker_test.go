package keeper_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// disconnectedSouls finds the disconnected souls with Soul Stack's own
// `souls list`, exits quietly when there are none, else records their SIDs
// and logs them.
const disconnectedSouls = `vars:
  disconnected:
    type: array[string]
    default: []

steps:
  any-disconnected:
    conditions:
      - apicall: "souls list"
        expect:
          - filter: "length([?status == 'disconnected'])"
            op: ">"
            value: 0
        on-error:
          - error-type: AttemptsLimitReached
            handler: _exit
    action:
      apicall: "souls list"
      parse:
        - filter: "[?status == 'disconnected'].sid"
          op: store
          var: disconnected
      log: "Disconnected souls: {{disconnected}}"
  report:
    action:
      log: "{{*disconnected | @}}"
`

// runScenario starts a scenario with `incarnation run`, waits for the run
// through @deps and checks @deps_status as the seed's cluster_fencing
// does, with its "Error: …" line for a dependency that did not succeed.
const runScenario = `vars:
  incarnation:
    type: string
    visibility: public
  scenario:
    type: string
    visibility: public
  input:
    type: object
    default: {}
    visibility: public

steps:
  start-run:
    action:
      apicall: "incarnation run --name {{incarnation}} --scenario {{scenario}} --input '{{*input}}'"
      parse:
        - filter: "@"
          op: push
          var: "@deps"
      log: "Started {{scenario}} on {{incarnation}}"
  check-errors:
    conditions:
      - const: "{{@deps_status}}"
        expect:
          - filter: "length([?task_status != ` + "`SUCCESS`" + `])"
            op: "=="
            value: 0
        attempts:
          max: 1
        log:
          before: "{{*@deps_status | (task_status != ` + "`SUCCESS`" + ` && join(': ', ['Error', task_name || '', run_error || '', task_message || ''])) || ''}}"
`

// TestCheckerOnSouls drives procedures built on Soul Stack's own commands
// through the API, as an Archon would (PUT, execute, poll the task),
// against an in-process keeper with three real souls, on SQLite and on
// PostgreSQL.
func TestCheckerOnSouls(t *testing.T) {
	backends(t, testCheckerOnSouls)
}

func testCheckerOnSouls(t *testing.T, dbURL string) {
	f := inProcessKeeper(t, dbURL)
	f.startSouls()
	f.registerFleet()
	f.createFleet()
	for name, src := range map[string]string{"disconnected_souls": disconnectedSouls, "run_scenario": runScenario} {
		if _, err := f.c.PutProcedure(f.ctx, name, src); err != nil {
			t.Fatalf("PUT %s: %v", name, err)
		}
	}
	// The checker's calls act for whoever executed the procedure (audit
	// M4): the runs its tasks start are theirs.
	who, err := f.c.Whoami(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	launcher := who.ArchonID
	if launcher == archonID(t, f, "checker") {
		t.Fatal("the test executes procedures as the checker itself")
	}

	t.Run("run a scenario and wait for it", func(t *testing.T) {
		task := f.execute("run_scenario", map[string]any{"incarnation": fleetInc, "scenario": "slow", "input": map[string]any{"stamp": "from-checker", "duration": "500ms"}})
		if task.Status != "SUCCESS" || task.RunError != "" {
			t.Fatalf("task %s: %s %q\n%s", task.ID, task.Status, task.RunError, taskLog(task))
		}
		run := latestRun(t, f)
		if run.Scenario != "slow" || run.Status != store.RunSucceeded || run.ArchonID != launcher {
			t.Fatalf("the checker's run: %+v", run)
		}
		// The task waited for the run: the run had ended before the check.
		if !strings.Contains(taskLog(task), "dependencies done: "+fleetInc+"/slow "+run.ID+": SUCCESS") {
			t.Errorf("step log does not show the run awaited:\n%s", taskLog(task))
		}
		if task.FinishedAt == nil || run.FinishedAt == nil || task.FinishedAt.Before(*run.FinishedAt) {
			t.Errorf("the task finished at %v, before its run (%v)", task.FinishedAt, run.FinishedAt)
		}
		if inc := f.incarnation(); inc.State["stamp"] != "from-checker" {
			t.Errorf("state after the checker's run: %v", inc.State)
		}
		for _, sid := range fleetSIDs {
			if got := f.file(sid, "srv/fleet/stamp"); got != "from-checker\n" {
				t.Errorf("%s stamp %q", sid, got)
			}
		}
	})

	t.Run("a failing scenario fails the task", func(t *testing.T) {
		task := f.execute("run_scenario", map[string]any{"incarnation": fleetInc, "scenario": "break", "input": map[string]any{"host": "soul-b"}})
		run := latestRun(t, f)
		if run.Scenario != "break" || run.Status != store.RunFailed || run.Error == "" {
			t.Fatalf("the checker's run: %+v", run)
		}
		if task.Status != "FAILURE" || !strings.Contains(task.RunError, "check-errors") {
			t.Fatalf("task %s: %s\n%s", task.ID, task.Status, taskLog(task))
		}
		want := "Error: " + fleetInc + "/break: " + run.Error + ": "
		if !slices.ContainsFunc(task.Log, func(l apitypes.CheckerLogLine) bool { return l.Message == want }) {
			t.Errorf("no log line %q:\n%s", want, taskLog(task))
		}
		if inc := f.incarnation(); inc.Status != store.IncarnationErrorLocked {
			t.Errorf("incarnation %s after the failed run", inc.Status)
		}
	})

	t.Run("record the disconnected souls", func(t *testing.T) {
		task := f.execute("disconnected_souls", nil)
		if task.Status != "SUCCESS" || !strings.Contains(taskLog(task), "AttemptsLimitReached → _exit") || strings.Contains(taskLog(task), "report") {
			t.Fatalf("with every soul connected: %s\n%s", task.Status, taskLog(task))
		}
		f.killSoul("soul-c")
		f.waitSouls(store.SoulDisconnected, "soul-c")
		task = f.execute("disconnected_souls", nil)
		if task.Status != "SUCCESS" {
			t.Fatalf("task %s: %s %q\n%s", task.ID, task.Status, task.RunError, taskLog(task))
		}
		for _, want := range []string{`Disconnected souls: ["soul-c"]`, "soul-c"} {
			if !slices.ContainsFunc(task.Log, func(l apitypes.CheckerLogLine) bool { return l.Kind == "log" && l.Message == want }) {
				t.Errorf("no log line %q:\n%s", want, taskLog(task))
			}
		}
	})
}

// execute starts a procedure through the API and polls its task until it
// ends.
func (f *fleet) execute(name string, vars map[string]any) apitypes.CheckerTask {
	f.t.Helper()
	resp, err := f.c.ExecuteProcedure(f.ctx, name, vars)
	if err != nil || len(resp.TaskIDs) != 1 {
		f.t.Fatalf("execute %s: %+v, %v", name, resp, err)
	}
	var task apitypes.CheckerTask
	testutil.WaitFor(f.t, 30*time.Second, func() bool {
		task, err = f.c.GetCheckerTask(f.ctx, resp.TaskIDs[0])
		return err == nil && task.Status != "PENDING" && task.Status != "RUNNING"
	}, "task %s of %s to end", resp.TaskIDs[0], name)
	return task
}

// latestRun is the fleet incarnation's newest run.
func latestRun(t *testing.T, f *fleet) apitypes.Run {
	t.Helper()
	runs, err := f.c.ListRuns(f.ctx, fleetInc, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	return runs[0]
}

func archonID(t *testing.T, f *fleet, name string) string {
	t.Helper()
	all, err := f.c.ListArchons(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if a.Name == name {
			return a.ID
		}
	}
	t.Fatalf("no archon %q among %+v", name, all)
	return ""
}

func taskLog(task apitypes.CheckerTask) string {
	var b strings.Builder
	for _, l := range task.Log {
		b.WriteString(l.Step + " " + l.Kind + ": " + l.Message + "\n")
	}
	return b.String()
}
