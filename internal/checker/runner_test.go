package checker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/soulstack/soulstack/internal/checker/checkertest"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// neverHolds waits 60 s between up to 100 attempts of a condition that
// never holds.
const neverHolds = `
config:
  timeout: 300
steps:
  wait:
    conditions:
      - const: 1
        expect:
          - {filter: "@", op: "==", value: 2}
        attempts: {max: 100, interval: 60}
`

func TestTaskTimeout(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("slow", neverHolds)
	task := e.execWait("slow", nil)
	if task.Status != StatusTimeout || task.RunError != "task timed out after 5m0s" {
		t.Fatalf("status %s run_error %q, want TIMEOUT\n%s", task.Status, task.RunError, dumpLog(task))
	}
	if got := task.FinishedAt.Sub(*task.StartedAt); got != 300*time.Second {
		t.Errorf("ran %s on the fake clock, want 5m", got)
	}
}

func TestCancelTask(t *testing.T) {
	clock := checkertest.NewFakeClock(t0, false)
	e := newEnv(t, Config{Clock: clock})
	e.put("slow", neverHolds)
	ctx := context.Background()
	tasks, err := e.c.Execute(ctx, ExecRequest{Procedure: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if err := clock.BlockUntil(ctx, 1); err != nil { // between attempts
		t.Fatal(err)
	}
	if err := e.c.Cancel(ctx, tasks[0].ID); err != nil {
		t.Fatal(err)
	}
	task, err := e.c.Wait(ctx, tasks[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != StatusCancelled {
		t.Fatalf("status %s (%s), want CANCELLED", task.Status, task.RunError)
	}
	if err := e.c.Cancel(ctx, task.ID); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("cancelling an ended task: %v, want conflict", err)
	}
}

func TestCancelParentCancelsChildren(t *testing.T) {
	clock := checkertest.NewFakeClock(t0, false)
	e := newEnv(t, Config{Clock: clock})
	e.put("slow", neverHolds)
	e.put("parent", `
steps:
  launch:
    action:
      apicall: "checker procedure execute --name slow --json yes"
      parse:
        - {filter: "@", op: push, var: "@deps"}
`)
	ctx := context.Background()
	tasks, err := e.c.Execute(ctx, ExecRequest{Procedure: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := clock.BlockUntil(ctx, 1); err != nil { // the child sleeps
		t.Fatal(err)
	}
	if err := e.c.Cancel(ctx, tasks[0].ID); err != nil {
		t.Fatal(err)
	}
	parent, err := e.c.Wait(ctx, tasks[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	kids := e.children(parent.ID)
	if len(kids) != 1 {
		t.Fatalf("%d children", len(kids))
	}
	child, err := e.c.Wait(ctx, kids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if parent.Status != StatusCancelled || child.Status != StatusCancelled || !strings.Contains(child.RunError, "parent task "+parent.ID) {
		t.Errorf("parent %s, child %s (%s)", parent.Status, child.Status, child.RunError)
	}
}

func TestRecoverFailsLeftoverTasks(t *testing.T) {
	e := newEnv(t, Config{KeeperID: "k1"})
	ctx := context.Background()
	for i, st := range []string{StatusRunning, StatusPending, StatusSuccess} {
		if err := e.store.CreateCheckerTask(ctx, store.CheckerTask{ID: fmt.Sprint("t", i), Procedure: "p", Status: st, KeeperID: "k1", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.c.Recover(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Recover = %d, %v; want 2", n, err)
	}
	for i, want := range []string{StatusFailure, StatusFailure, StatusSuccess} {
		got, err := e.store.GetCheckerTask(ctx, fmt.Sprint("t", i))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || (want == StatusFailure && got.RunError != RestartRunError) {
			t.Errorf("t%d: %s %q", i, got.Status, got.RunError)
		}
	}
}

func TestRunOnVIPNeedsTheLeader(t *testing.T) {
	leader := false
	e := newEnv(t, Config{IsLeader: func() bool { return leader }})
	e.putExample("cluster_fencing", "cluster_fencing.yaml")
	_, err := e.c.Execute(context.Background(), ExecRequest{Procedure: "cluster_fencing"})
	if domain.ErrorCode(err) != domain.CodeUnavailable || !strings.Contains(err.Error(), "run-on-vip") {
		t.Fatalf("Execute on a follower: %v", err)
	}
	if all, _ := e.store.ListCheckerTasks(context.Background(), "", 0); len(all) != 0 {
		t.Errorf("%d tasks created on a follower", len(all))
	}
	// A procedure without run-on-vip runs anywhere.
	e.put("hello", helloProc)
	if task := e.execWait("hello", map[string]any{"who": "x"}); task.Status != StatusSuccess {
		t.Errorf("hello on a follower: %s", task.Status)
	}
}

func TestLaunchValidation(t *testing.T) {
	e := newEnv(t, Config{})
	e.putExample("fence_node", "fence_node.yaml")
	e.putExample("cluster_fencing", "cluster_fencing.yaml")
	tests := []struct {
		name, proc string
		vars       map[string]any
		want       string
	}{
		{"private var", "cluster_fencing", map[string]any{"down_nodes": []any{"n1"}}, `var "down_nodes" of procedure cluster_fencing is private and cannot be set at launch`},
		{"unknown var", "fence_node", map[string]any{"node": "n", "exclude_current_node": true, "x": 1}, `procedure fence_node has no var "x"`},
		{"wrong type", "fence_node", map[string]any{"node": 7, "exclude_current_node": true}, `var "node" is string, got 7`},
		{"missing", "fence_node", map[string]any{"node": "n"}, `var "exclude_current_node" of procedure fence_node has no default and must be set at launch`},
		{"bad fan-out element", "fence_node", map[string]any{"node": []any{"a", 1}, "exclude_current_node": true}, `element 1 of the fan-out array`},
		{"two fan-outs", "fence_node", map[string]any{"node": []any{"a"}, "exclude_current_node": []any{true}}, `both fan out`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.c.Execute(context.Background(), ExecRequest{Procedure: tt.proc, Vars: tt.vars})
			if domain.ErrorCode(err) != domain.CodeInvalid || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want invalid containing %q", err, tt.want)
			}
		})
	}
	_, err := e.c.Execute(context.Background(), ExecRequest{Procedure: "nope"})
	if !errors.Is(err, domain.ErrNotFound) && domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("unknown procedure: %v", err)
	}
}

func TestFanOutFromExecute(t *testing.T) {
	p := newPlatform(t, platformState{})
	e := newEnv(t, Config{Bindings: p.bindings()})
	e.putExample("fence_node", "fence_node.yaml")
	tasks, err := e.c.Execute(context.Background(), ExecRequest{Procedure: "fence_node",
		Vars: map[string]any{"node": []any{"a", "b", "c"}, "exclude_current_node": false}})
	if err != nil || len(tasks) != 3 {
		t.Fatalf("Execute: %d tasks, %v", len(tasks), err)
	}
	for _, task := range tasks {
		if got, err := e.c.Wait(context.Background(), task.ID); err != nil || got.Status != StatusSuccess {
			t.Errorf("task %s: %s %v", task.Vars["node"], got.Status, err)
		}
	}
	resets := p.read().Resets
	slices.Sort(resets)
	if !slices.Equal(resets, []string{"a", "b", "c"}) {
		t.Errorf("resets %v", resets)
	}
}

func TestFanOutRunsInParallel(t *testing.T) {
	clock := checkertest.NewFakeClock(t0, false)
	e := newEnv(t, Config{Clock: clock})
	e.put("slow", strings.Replace(neverHolds, "steps:", "vars:\n  n: {type: number, visibility: public}\nsteps:", 1))
	e.put("parent", `
steps:
  launch:
    action:
      apicall: 'checker procedure execute --name slow --vars ''{"n": [1, 2, 3]}'' --json yes'
      parse:
        - {filter: "@", op: push, var: "@deps"}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.c.Execute(ctx, ExecRequest{Procedure: "parent"}); err != nil {
		t.Fatal(err)
	}
	// All three sub-tasks sleep between attempts at the same time: they run
	// in parallel, not one after another.
	if err := clock.BlockUntil(ctx, 3); err != nil {
		t.Fatalf("the three sub-tasks never waited together: %v", err)
	}
}

// fakeRuns is a Commander for "incarnation run" and a RunStatus whose runs
// report RUNNING for a few polls.
type fakeRuns struct {
	mu    sync.Mutex
	argvs [][]string
	polls map[string]int
}

func (f *fakeRuns) Run(_ context.Context, argv []string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.argvs = append(f.argvs, argv)
	switch strings.Join(argv[:2], " ") {
	case "souls list":
		return []any{map[string]any{"sid": "h1", "status": "connected"}, map[string]any{"sid": "h2", "status": "disconnected"}}, nil
	case "incarnation run":
		return map[string]any{"apply_id": "run-1"}, nil
	}
	return nil, fmt.Errorf("unknown command %v", argv)
}

func (f *fakeRuns) status(_ context.Context, id string) (DepStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != "run-1" {
		return DepStatus{}, domain.ErrNotFound
	}
	f.polls[id]++
	st := DepStatus{TaskID: id, TaskName: "cache/restart", TaskStatus: StatusRunning}
	if f.polls[id] > 3 {
		st.TaskStatus = StatusSuccess
	}
	return st, nil
}

func TestSoulStackCommandsAndRunDeps(t *testing.T) {
	fr := &fakeRuns{polls: map[string]int{}}
	e := newEnv(t, Config{Commander: fr, RunStatus: fr.status, PollInterval: 5 * time.Second})
	e.put("restart", `
vars:
  lost:
    type: array[string]
    default: []
steps:
  find-lost:
    action:
      apicall: "souls list"
      parse:
        - {filter: "[?status=='disconnected'].sid", op: push, var: lost}
      log: "lost souls: {{*lost}}"
  restart:
    action:
      apicall: "incarnation run --name cache --scenario restart"
      parse:
        - {filter: "@", op: push, var: "@deps"}
  check:
    conditions:
      - const: "{{@deps_status}}"
        expect:
          - {filter: "[0].task_status", op: "==", value: SUCCESS}
          - {filter: "length(@)", op: "==", value: 1}
`)
	task := e.execWait("restart", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s (%s)\n%s", task.Status, task.RunError, dumpLog(task))
	}
	want := [][]string{{"souls", "list"}, {"incarnation", "run", "--name", "cache", "--scenario", "restart"}}
	if diff := cmp.Diff(want, fr.argvs); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if !slices.Contains(logLines(task, LogMessage), `find-lost: lost souls: ["h2"]`) {
		t.Errorf("messages %q", logLines(task, LogMessage))
	}
	if fr.polls["run-1"] != 4 {
		t.Errorf("run polled %d times, want 4", fr.polls["run-1"])
	}
}

func TestStepErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"ordering op on a string", `
steps:
  s:
    conditions:
      - const: "abc"
        expect: [{filter: "@", op: ">", value: 1}]
`, `op > needs two numbers, got string > number`},
		{"store of the wrong type", `
vars:
  n: {type: number}
steps:
  s:
    action:
      apicall: 'checker procedure execute --name other --vars ''{"x": []}'' --json yes' 
      parse: [{filter: "@", op: store, var: n}]
`, `var is number, got []`},
		{"no commander", `
steps:
  s:
    action:
      apicall: "souls list"
`, `no soulctl commander is configured`},
		{"no handler", `
steps:
  s:
    conditions:
      - const: 1
        expect: [{filter: "@", op: "==", value: 2}]
        attempts: {max: 2, interval: 5}
`, `step s: condition 1 not met after 2 attempt(s) (AttemptsLimitReached, no on-error handler)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.put("other", "vars:\n  x: {type: string, default: \"\", visibility: public}\nsteps:\n  s:\n    action:\n      log: hi\n")
			// Launching "other" with an empty fan-out array returns [].
			e.put("p", tt.src)
			task := e.execWait("p", nil)
			if task.Status != StatusFailure || !strings.Contains(task.RunError, tt.want) {
				t.Errorf("status %s run_error %q, want FAILURE containing %q", task.Status, task.RunError, tt.want)
			}
		})
	}
}

func TestExternalBindingFailures(t *testing.T) {
	sh := func(prefix, script string, timeout time.Duration) Binding {
		return Binding{Prefix: prefix, Executable: "/bin/sh", Args: []string{"-c", script, prefix}, Timeout: timeout}
	}
	bindings := []Binding{
		sh("ok", `for a; do printf '[%s]' "$a" >&2; done; echo '{"n": '$#'}'`, 0),
		sh("fails", `echo "boom: bad thing" >&2; exit 3`, 0),
		sh("garbage", `echo not json`, 0),
		sh("hangs", `sleep 10`, 100*time.Millisecond),
	}
	tests := []struct {
		cmd, wantErr, wantStderr string
	}{
		{`ok a 'b c' "d\"e" {{ v }}`, "", `[a][b c][d"e][x y]`},
		{"fails now", "fails: exit status 3: boom: bad thing", "boom: bad thing"},
		{"garbage", "garbage: stdout is not JSON", ""},
		{"hangs", "hangs: timed out after 100ms", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			e := newEnv(t, Config{Bindings: bindings})
			e.put("p", fmt.Sprintf("vars:\n  v: {type: string, default: \"x y\"}\n  n: {type: number}\nsteps:\n  s:\n    action:\n      apicall: %q\n      parse: [{filter: n, op: store, var: n}]\n      log: \"{{ n }} args\"\n", tt.cmd))
			task := e.execWait("p", nil)
			if tt.wantErr == "" {
				if task.Status != StatusSuccess || task.Message != "4 args" {
					t.Fatalf("status %s (%s), message %q, want SUCCESS, 4 args", task.Status, task.RunError, task.Message)
				}
			} else if task.Status != StatusFailure || !strings.Contains(task.RunError, tt.wantErr) {
				t.Fatalf("status %s run_error %q, want FAILURE with %q", task.Status, task.RunError, tt.wantErr)
			}
			if tt.wantStderr != "" && !containsLine(logLines(task, LogStderr), tt.wantStderr) {
				t.Errorf("stderr lines %q, want %q", logLines(task, LogStderr), tt.wantStderr)
			}
		})
	}
}

// TestBindingsDoNotGetTheKeeperCredentials: a bound executable inherits
// the keeper's environment, but not the database URL (with its password)
// the keeper may be configured with there.
func TestBindingsDoNotGetTheKeeperCredentials(t *testing.T) {
	t.Setenv("SOULSTACK_DATABASE_URL", "postgres://keeper:hunter2@db/keeper")
	t.Setenv("PGPASSWORD", "hunter3")
	t.Setenv("SOULSTACK_TEST_VISIBLE", "kept")
	b := Binding{Prefix: "env", Executable: "/bin/sh", Args: []string{"-c",
		`printf '{"db": "%s", "pg": "%s", "other": "%s", "own": "%s"}' "$SOULSTACK_DATABASE_URL" "$PGPASSWORD" "$SOULSTACK_TEST_VISIBLE" "$OWN"`},
		Env: []string{"OWN=set"}}
	e := newEnv(t, Config{Bindings: []Binding{b}})
	e.put("p", "vars:\n  out: {type: object}\nsteps:\n  s:\n    action:\n      apicall: env show\n      parse: [{filter: '@', op: store, var: out}]\n      log: \"{{*out}}\"\n")
	task := e.execWait("p", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s (%s)", task.Status, task.RunError)
	}
	if task.Message != `{"db":"","other":"kept","own":"set","pg":""}` {
		t.Errorf("the binding saw %s", task.Message)
	}
}

func TestNewRejectsBadBindings(t *testing.T) {
	s := newStore(t)
	for _, bs := range [][]Binding{
		{{Prefix: "x"}},
		{{Prefix: "checker", Executable: "/bin/true"}},
		{{Prefix: "x", Executable: "/bin/true"}, {Prefix: "x", Executable: "/bin/true"}},
		{{Prefix: "x", Executable: "/bin/true", StatusCommand: "show 'unterminated"}},
	} {
		if _, err := New(Config{Store: s, Bindings: bs}); err == nil {
			t.Errorf("New accepted bindings %+v", bs)
		}
	}
}
