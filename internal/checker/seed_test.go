package checker

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The seed's three procedures (seed 003), run as written (vm_monitoring
// with its one-line indentation fix) against the test platform.

var vmVars = map[string]any{"vcl": "production-vdc", "vmname": "web-server-01", "state": "reboot"}

func TestVMMonitoringUnfixedFileIsRefusedWithHint(t *testing.T) {
	_, err := ParseProcedure("vm_monitoring", []byte(readExample(t, "vm_monitoring.yaml")))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("ParseProcedure: err = %v, want a *ValidationError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"vm_monitoring:35:11:",
		"line 35: `handler:` looks mis-indented: it must be indented under the `- error-type:` item (same column as `error-type`",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q\ndoes not contain %q", msg, want)
		}
	}
	if _, err := ParseProcedure("vm_monitoring", []byte(readExample(t, "vm_monitoring.fixed.yaml"))); err != nil {
		t.Fatalf("the fixed file: %v", err)
	}
	// The fix is exactly one line.
	a := strings.Split(readExample(t, "vm_monitoring.yaml"), "\n")
	b := strings.Split(readExample(t, "vm_monitoring.fixed.yaml"), "\n")
	var diff []int
	for i := range a {
		if a[i] != b[i] {
			diff = append(diff, i+1)
		}
	}
	if len(a) != len(b) || !slices.Equal(diff, []int{35}) {
		t.Errorf("fixed file differs on lines %v, want only 35", diff)
	}
}

func TestVMMonitoringRunningVMExitsQuietly(t *testing.T) {
	p := newPlatform(t, platformState{VMs: map[string]*platformVM{"production-vdc/web-server-01": {State: 1}}})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("vm_monitoring", "vm_monitoring.fixed.yaml")

	task := e.execWait("vm_monitoring", vmVars)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s (%s), want SUCCESS\n%s", task.Status, task.RunError, dumpLog(task))
	}
	if got := p.calls("scheduler request state"); len(got) != 0 {
		t.Errorf("state calls %v, want none", got)
	}
	if got := len(p.calls("scheduler request show")); got != 2 {
		t.Errorf("%d show calls, want 2 (save_value, reboot-on-error)", got)
	}
	if !slices.Contains(logLines(task, LogMessage), "save_value: 1") {
		t.Errorf("log lines %q: want save_value logging the stored value 1", logLines(task, LogMessage))
	}
	if !containsLine(logLines(task, LogCondition), "reboot-on-error: condition 1: AttemptsLimitReached → _exit") {
		t.Errorf("condition lines %q: want the _exit", logLines(task, LogCondition))
	}
}

func TestVMMonitoringRebootsAndWaits(t *testing.T) {
	tests := []struct {
		name        string
		bootPolls   int
		wantStatus  string
		wantAttempt int // attempts of wait-for-reboot
	}{
		{"comes back on the second attempt", 1, StatusSuccess, 2},
		{"never comes back", 10, StatusFailure, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlatform(t, platformState{VMs: map[string]*platformVM{"production-vdc/web-server-01": {State: 5, BootPolls: tt.bootPolls}}})
			e := newEnv(t, Config{Bindings: p.bindings()})
			e.putExample("vm_monitoring", "vm_monitoring.fixed.yaml")

			task := e.execWait("vm_monitoring", vmVars)
			if task.Status != tt.wantStatus {
				t.Fatalf("status %s (%s), want %s\n%s", task.Status, task.RunError, tt.wantStatus, dumpLog(task))
			}
			if got := p.read().VMs["production-vdc/web-server-01"].Requested; !slices.Equal(got, []string{"reboot"}) {
				t.Errorf("requested states %v, want [reboot]", got)
			}
			var times []time.Time
			for _, l := range task.Log {
				if l.Step == "wait-for-reboot" && l.Kind == LogAttempt {
					times = append(times, l.Time)
				}
			}
			if len(times) != tt.wantAttempt {
				t.Fatalf("%d wait-for-reboot attempts, want %d\n%s", len(times), tt.wantAttempt, dumpLog(task))
			}
			for i := 1; i < len(times); i++ {
				if d := times[i].Sub(times[i-1]); d != 60*time.Second {
					t.Errorf("attempts %d and %d are %s apart, want 60s", i, i+1, d)
				}
			}
			if tt.wantStatus == StatusFailure && !strings.Contains(task.RunError, "step wait-for-reboot: condition 1 not met after 3 attempt(s)") {
				t.Errorf("run_error %q", task.RunError)
			}
		})
	}
}

func TestClusterFencingExitsWhenNoNodeIsDown(t *testing.T) {
	p := newPlatform(t, platformState{Nodes: []platformNode{{"n1", "UP"}, {"n2", "UP"}, {"n3", "DOWN"}}, Drained: []string{"n3"}})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("cluster_fencing", "cluster_fencing.yaml")
	e.putExample("fence_node", "fence_node.yaml")

	task := e.execWait("cluster_fencing", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s (%s)\n%s", task.Status, task.RunError, dumpLog(task))
	}
	var times []time.Time
	for _, l := range task.Log {
		if l.Kind == LogAttempt {
			times = append(times, l.Time)
		}
	}
	if len(times) != 2 || times[1].Sub(times[0]) != 10*time.Second {
		t.Fatalf("attempts at %v, want exactly two 10s apart\n%s", times, dumpLog(task))
	}
	if got := p.read().Calls; len(got) != 4 {
		t.Errorf("platform calls %v, want 4 (two attempts × two commands)", got)
	}
	if kids := e.children(task.ID); len(kids) != 0 {
		t.Errorf("%d fence_node tasks, want none", len(kids))
	}
}

func TestClusterFencingFansOutAndWaits(t *testing.T) {
	p := newPlatform(t, platformState{
		Nodes:           []platformNode{{"n1", "DOWN"}, {"n2", "UP"}, {"n3", "DOWN"}, {"n4", "DOWN"}},
		Drained:         []string{"n4"}, // under maintenance: not fenced
		ReschedulePolls: 2,
	})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("cluster_fencing", "cluster_fencing.yaml")
	e.putExample("fence_node", "fence_node.yaml")

	task := e.execWait("cluster_fencing", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s (%s)\n%s", task.Status, task.RunError, dumpLog(task))
	}
	if !slices.Contains(logLines(task, LogMessage), `collect-down-nodes: Found down nodes: ["n1","n3"]`) {
		t.Errorf("messages %q", logLines(task, LogMessage))
	}
	kids := e.children(task.ID)
	var nodes []string
	for _, k := range kids {
		nodes = append(nodes, k.Vars["node"].(string))
		if k.Procedure != "fence_node" || k.Status != StatusSuccess {
			t.Errorf("child %s %s %s (%s)\n%s", k.ID, k.Procedure, k.Status, k.RunError, dumpLog(k))
		}
		if k.Vars["exclude_current_node"] != false {
			t.Errorf("child vars %v: exclude_current_node should be passed as false", k.Vars)
		}
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, []string{"n1", "n3"}) {
		t.Fatalf("fenced nodes %v, want [n1 n3]", nodes)
	}
	// Both children were launched by one step, before the parent waited.
	if !containsLine(logLines(task, LogDeps), ": waiting for 2 dependencies") {
		t.Errorf("deps lines %q", logLines(task, LogDeps))
	}
	resets := p.read().Resets
	slices.Sort(resets)
	if !slices.Equal(resets, []string{"n1", "n3"}) {
		t.Errorf("resets %v", resets)
	}
	if got := len(p.calls("scheduler request reschedule")); got != 2 {
		t.Errorf("%d reschedules, want 2", got)
	}
	if got := p.calls("scheduler drain"); len(got) != 0 {
		t.Errorf("drain calls %v, want none (exclude_current_node false)", got)
	}
}

func TestClusterFencingFailsWithSeedErrorFormat(t *testing.T) {
	p := newPlatform(t, platformState{
		Nodes:          []platformNode{{"n1", "DOWN"}, {"n2", "DOWN"}},
		RescheduleFail: []string{"n2"},
	})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("cluster_fencing", "cluster_fencing.yaml")
	e.putExample("fence_node", "fence_node.yaml")

	task := e.execWait("cluster_fencing", map[string]any{"exclude_current_node": true})
	if task.Status != StatusFailure {
		t.Fatalf("status %s, want FAILURE\n%s", task.Status, dumpLog(task))
	}
	var failed []string
	for _, k := range e.children(task.ID) {
		switch k.Vars["node"] {
		case "n1":
			if k.Status != StatusSuccess {
				t.Errorf("n1: %s (%s)", k.Status, k.RunError)
			}
		case "n2":
			if k.Status != StatusFailure {
				t.Fatalf("n2: %s, want FAILURE\n%s", k.Status, dumpLog(k))
			}
			wantMsg := "Error: reschedule: no capacity to reschedule the VMs of node n2: 2 VMs left on n2"
			if k.Message != wantMsg {
				t.Errorf("n2 task_message %q, want %q", k.Message, wantMsg)
			}
			wantErr := "step check-errors: condition 1 not met after 1 attempt(s) (AttemptsLimitReached, no on-error handler)"
			if k.RunError != wantErr {
				t.Errorf("n2 run_error %q, want %q", k.RunError, wantErr)
			}
			failed = append(failed, "Error: fence_node: "+k.RunError+": "+k.Message)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("failed children %v", failed)
	}
	if diff := cmp.Diff(failed[0], task.Message); diff != "" {
		t.Errorf("parent task_message (-want +got):\n%s", diff)
	}
	// With exclude_current_node, each fenced node was drained and re-included.
	if got := len(p.calls("scheduler drain add")); got != 2 {
		t.Errorf("%d drain add, want 2", got)
	}
	if got := len(p.calls("scheduler drain del")); got != 2 {
		t.Errorf("%d drain del, want 2", got)
	}
}

func TestFenceNodeContinueBranches(t *testing.T) {
	tests := []struct {
		exclude   bool
		wantDrain []string
	}{
		{true, []string{"scheduler drain add --nodes n7", "scheduler drain del --nodes n7"}},
		{false, nil},
	}
	for _, tt := range tests {
		t.Run(map[bool]string{true: "exclude", false: "keep"}[tt.exclude], func(t *testing.T) {
			p := newPlatform(t, platformState{Nodes: []platformNode{{"n7", "DOWN"}}})
			e := newEnv(t, Config{Bindings: p.bindings()})
			e.putExample("fence_node", "fence_node.yaml")

			task := e.execWait("fence_node", map[string]any{"node": "n7", "exclude_current_node": tt.exclude})
			if task.Status != StatusSuccess {
				t.Fatalf("status %s (%s)\n%s", task.Status, task.RunError, dumpLog(task))
			}
			if diff := cmp.Diff(tt.wantDrain, p.calls("scheduler drain")); diff != "" {
				t.Errorf("drain calls (-want +got):\n%s", diff)
			}
			if got := p.read().Drained; len(got) != 0 {
				t.Errorf("drained %v after the procedure, want none", got)
			}
			var order []string
			for _, c := range p.read().Calls {
				order = append(order, c[0]+" "+c[1])
			}
			want := []string{"commands ipmi", "scheduler request", "tasks show"}
			if tt.exclude {
				want = []string{"commands ipmi", "scheduler drain", "scheduler request", "tasks show", "scheduler drain"}
			}
			if diff := cmp.Diff(want, order); diff != "" {
				t.Errorf("call order (-want +got):\n%s", diff)
			}
			skipped := containsLine(logLines(task, LogCondition), "_continue: skipping the action")
			if skipped == tt.exclude {
				t.Errorf("_continue logged = %v with exclude_current_node %v\n%s", skipped, tt.exclude, dumpLog(task))
			}
		})
	}
}

func TestFenceNodeFailsWhenResetFails(t *testing.T) {
	p := newPlatform(t, platformState{IPMIFail: []string{"n9"}})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("fence_node", "fence_node.yaml")

	task := e.execWait("fence_node", map[string]any{"node": "n9", "exclude_current_node": false})
	if task.Status != StatusFailure || !strings.Contains(task.RunError, "BMC of node n9 does not answer") {
		t.Fatalf("status %s run_error %q", task.Status, task.RunError)
	}
	if !containsLine(logLines(task, LogStderr), "ipmi: BMC of node n9 does not answer") {
		t.Errorf("stderr not in the step log\n%s", dumpLog(task))
	}
	if got := p.calls("scheduler"); len(got) != 0 {
		t.Errorf("calls after the failed reset: %v", got)
	}
}

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestVMMonitoringSurvivesAFailedShowWhileWaiting injects one failed
// `scheduler request show` into vm_monitoring's wait-for-reboot: the failed
// command is an attempt that did not hold (logged with its error), the
// next attempt 60 s later sees the VM running, and the procedure succeeds.
func TestVMMonitoringSurvivesAFailedShowWhileWaiting(t *testing.T) {
	// BootPolls 0: the VM is up at the first show after the reboot request.
	// save_value and reboot-on-error show once each; the third show, the
	// first attempt of wait-for-reboot, fails.
	p := newPlatform(t, platformState{
		VMs:    map[string]*platformVM{"production-vdc/web-server-01": {State: 5}},
		FailAt: map[string][]int{"scheduler request show": {3}},
	})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("vm_monitoring", "vm_monitoring.fixed.yaml")

	task := e.execWait("vm_monitoring", vmVars)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s (%s), want SUCCESS\n%s", task.Status, task.RunError, dumpLog(task))
	}
	var attempts []string
	var times []time.Time
	for _, l := range task.Log {
		if l.Step == "wait-for-reboot" && l.Kind == LogAttempt {
			attempts = append(attempts, l.Message)
			times = append(times, l.Time)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("wait-for-reboot attempts %q, want 2\n%s", attempts, dumpLog(task))
	}
	if !strings.Contains(attempts[0], "attempt 1/3: not held (command failed:") || !strings.Contains(attempts[0], "injected failure") {
		t.Errorf("first attempt logged %q, want the failed command with its error", attempts[0])
	}
	if !strings.Contains(attempts[1], "attempt 2/3: held") {
		t.Errorf("second attempt logged %q, want held", attempts[1])
	}
	if d := times[1].Sub(times[0]); d != 60*time.Second {
		t.Errorf("retried after %s, want the 60 s interval", d)
	}
	if got := len(p.calls("scheduler request show")); got != 4 {
		t.Errorf("%d show calls, want 4 (save_value, reboot-on-error, the failed one, the retry)", got)
	}
}
