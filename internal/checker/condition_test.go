package checker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// A command that fails inside a condition is an attempt that did not hold
// (SPEC §13): retried at the next interval. When the command still fails
// on the last attempt the condition could not be evaluated: the step fails
// with that error whatever the on-error handlers say (issue 35); when it
// answered on the last attempt and expect did not hold, AttemptsLimitReached
// carries the last error and on-error applies. In an action the same
// failure fails the step at once.
func TestFailingCommandInCondition(t *testing.T) {
	const gate = `
steps:
  gate:
    conditions:
      - apicall: "cluster nodes list"
        expect:
          - {filter: "length(@)", op: ">", value: 0}
        attempts: {max: 3, interval: 10}
%s
  after:
    action:
      log: "after the gate"
`
	tests := []struct {
		name       string
		onError    string
		failAt     []int
		wantStatus string
		wantCalls  int
		wantErr    string // in run_error
		wantLine   string // in the condition log
	}{
		{"recovers on the next attempt", "", []int{1}, StatusSuccess, 2, "", ""},
		{"every attempt fails, no handler", "", []int{1, 2, 3}, StatusFailure, 3,
			"step gate: condition 1 could not be evaluated: its command failed on the last attempt (3 of 3): apicall \"cluster nodes list\": cluster: exit status 1: cluster nodes list: injected failure: the platform API answered 502 Bad Gateway", ""},
		{"every attempt fails, _exit", "        on-error:\n          - error-type: AttemptsLimitReached\n            handler: _exit", []int{1, 2, 3}, StatusFailure, 3,
			"step gate: condition 1 could not be evaluated", "gate: condition 1: the command failed on its last attempt"},
		{"every attempt fails, _continue", "        on-error:\n          - error-type: AttemptsLimitReached\n            handler: _continue", []int{1, 2, 3}, StatusFailure, 3,
			"step gate: condition 1 could not be evaluated", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlatform(t, platformState{Nodes: []platformNode{{"n1", "UP"}}, FailAt: map[string][]int{"cluster nodes list": tt.failAt}})
			e := newEnv(t, Config{Bindings: p.bindings()})
			e.put("gated", strings.Replace(gate, "%s", tt.onError, 1))
			task := e.execWait("gated", nil)
			if task.Status != tt.wantStatus {
				t.Fatalf("status %s (%s), want %s\n%s", task.Status, task.RunError, tt.wantStatus, dumpLog(task))
			}
			if got := len(p.calls("cluster nodes list")); got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
			if tt.wantErr != "" && !strings.HasPrefix(task.RunError, tt.wantErr) {
				t.Errorf("run_error\n %q\nwant\n %q", task.RunError, tt.wantErr)
			}
			if tt.wantLine != "" && !containsLine(logLines(task, LogCondition), tt.wantLine) {
				t.Errorf("condition log %q lacks %q", logLines(task, LogCondition), tt.wantLine)
			}
			ranAfter := containsLine(logLines(task, LogMessage), "after the gate")
			if wantAfter := tt.wantStatus == StatusSuccess && !strings.Contains(tt.onError, "_exit"); ranAfter != wantAfter {
				t.Errorf("step after ran = %v, want %v\n%s", ranAfter, wantAfter, dumpLog(task))
			}
			if !containsLine(logLines(task, LogAttempt), "attempt 1/3: not held (command failed:") {
				t.Errorf("the failed attempt is not logged with its error\n%s", dumpLog(task))
			}
		})
	}
}

func TestFailingCommandInActionFailsTheStep(t *testing.T) {
	p := newPlatform(t, platformState{Nodes: []platformNode{{"n1", "UP"}}, FailAt: map[string][]int{"cluster nodes list": {1}}})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.put("act", "steps:\n  list:\n    action:\n      apicall: \"cluster nodes list\"\n")
	task := e.execWait("act", nil)
	if task.Status != StatusFailure || !strings.Contains(task.RunError, "step list: action: apicall \"cluster nodes list\"") {
		t.Fatalf("status %s run_error %q", task.Status, task.RunError)
	}
	if got := len(p.calls("cluster nodes list")); got != 1 {
		t.Errorf("%d calls, want 1 (actions are not retried)", got)
	}
}

func TestStatusCommandNeedsItsOwnBinding(t *testing.T) {
	_, err := New(Config{Store: newStore(t), Bindings: []Binding{{Prefix: "scheduler", Executable: "/bin/true", StatusCommand: "tasks show --uuid {id}"}}})
	if err == nil || !strings.Contains(err.Error(), `no binding has the prefix "tasks"`) {
		t.Fatalf("New with an unbound status command prefix: %v", err)
	}
	if _, err := New(Config{Store: newStore(t), Bindings: []Binding{
		{Prefix: "scheduler", Executable: "/bin/true", StatusCommand: "tasks show --uuid {id}"},
		{Prefix: "tasks", Executable: "/bin/true"},
	}}); err != nil {
		t.Fatalf("New with the tasks binding: %v", err)
	}
}

// A run-on-vip task on a keeper that lost leadership stops before its next
// step: singleton work ends on the old leader (SPEC §10.4).
func TestRunOnVIPStopsWhenLeadershipIsLost(t *testing.T) {
	var calls atomic.Int32
	// Execute asks once, the task before each step: the keeper leads at
	// the launch and at the first step, not at the second.
	leading := func() bool { return calls.Add(1) <= 2 }
	e := newEnv(t, Config{IsLeader: leading})
	e.put("vip", "config:\n  run-on-vip: true\nsteps:\n  first:\n    action:\n      log: one\n  second:\n    action:\n      log: two\n")
	task := e.execWait("vip", nil)
	if task.Status != StatusFailure || !strings.Contains(task.RunError, "no longer the leader") {
		t.Fatalf("status %s run_error %q", task.Status, task.RunError)
	}
	if msgs := logLines(task, LogMessage); len(msgs) != 1 || msgs[0] != "first: one" {
		t.Errorf("messages %q, want only the first step's", msgs)
	}
}

// A run-on-vip launch on a non-leader goes to Forward (the keeper sends it
// to the leader); without one it is refused.
func TestRunOnVIPForwardedFromNonLeader(t *testing.T) {
	var forwarded []string
	e := newEnv(t, Config{IsLeader: func() bool { return false }, Forward: func(_ context.Context, name string, vars map[string]any) ([]store.CheckerTask, error) {
		forwarded = append(forwarded, name)
		return []store.CheckerTask{{ID: "on-the-leader", Procedure: name, Status: StatusPending}}, nil
	}})
	e.put("vip", "config:\n  run-on-vip: true\nsteps:\n  s:\n    action:\n      log: hi\n")
	tasks, err := e.c.Execute(context.Background(), ExecRequest{Procedure: "vip"})
	if err != nil || len(tasks) != 1 || tasks[0].ID != "on-the-leader" || len(forwarded) != 1 {
		t.Fatalf("Execute on a non-leader: %+v, %v (forwarded %v)", tasks, err, forwarded)
	}
	if all, _ := e.store.ListCheckerTasks(context.Background(), "", 0); len(all) != 0 {
		t.Errorf("the non-leader created tasks itself: %+v", all)
	}
	e2 := newEnv(t, Config{IsLeader: func() bool { return false }})
	e2.put("vip", "config:\n  run-on-vip: true\nsteps:\n  s:\n    action:\n      log: hi\n")
	if _, err := e2.c.Execute(context.Background(), ExecRequest{Procedure: "vip"}); domain.ErrorCode(err) != domain.CodeUnavailable {
		t.Errorf("without Forward: %v, want unavailable", err)
	}
}

// TestConditionThatCannotBeEvaluatedFailsTheStep (issue 35): a condition
// whose apicall fails on its last attempt — no binding for the command,
// a non-zero exit, output that is not JSON — fails the step with that
// error, even with an _exit handler (cluster_fencing on a Keeper with no
// platform bindings used to end SUCCESS). When the command answered and
// expect did not hold, the handler still applies.
func TestConditionThatCannotBeEvaluatedFailsTheStep(t *testing.T) {
	const proc = `
steps:
  gate:
    conditions:
      - apicall: "cluster nodes list"
        expect:
          - {filter: "length(@)", op: ">", value: 0}
        attempts: {max: 2, interval: 10}
        on-error:
          - error-type: AttemptsLimitReached
            handler: _exit
  after:
    action:
      log: "after the gate"
`
	sh := func(script string) []Binding {
		return []Binding{{Prefix: "cluster", Executable: "/bin/sh", Args: []string{"-c", script}, Timeout: 20 * time.Second}}
	}
	tests := []struct {
		name       string
		bindings   []Binding
		wantStatus string
		wantErr    string
	}{
		{"no binding", nil, StatusFailure, "step gate: condition 1 could not be evaluated: its command failed on the last attempt (2 of 2): "},
		{"non-zero exit", sh("echo boom >&2; exit 3"), StatusFailure, "step gate: condition 1 could not be evaluated: its command failed on the last attempt (2 of 2): apicall \"cluster nodes list\""},
		{"malformed JSON", sh("echo '{not json'"), StatusFailure, "step gate: condition 1 could not be evaluated: its command failed on the last attempt (2 of 2): apicall \"cluster nodes list\""},
		{"answered, expect not held: _exit applies", sh("echo '[]'"), StatusSuccess, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{Bindings: tt.bindings})
			e.put("gated", proc)
			task := e.execWait("gated", nil)
			if task.Status != tt.wantStatus || !strings.HasPrefix(task.RunError, tt.wantErr) {
				t.Fatalf("status %s run_error %q, want %s %q\n%s", task.Status, task.RunError, tt.wantStatus, tt.wantErr, dumpLog(task))
			}
			if containsLine(logLines(task, LogMessage), "after the gate") {
				t.Errorf("step after ran\n%s", dumpLog(task))
			}
		})
	}
}
