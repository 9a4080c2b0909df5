// Command testplatform simulates the external platform CLIs the seed's
// Checker procedures call (seed 003): `cluster`, `scheduler` and
// `commands`. Tests build it, bind it to those prefixes and control it
// through a JSON state file:
//
//	testplatform --state FILE cluster nodes list
//	testplatform --state FILE scheduler labels list
//	testplatform --state FILE scheduler request show --name N --vcluster V --kind vm --metrics yes
//	testplatform --state FILE scheduler request state --vcluster V --name N --kind vm --state S
//	testplatform --state FILE scheduler drain add|del --nodes U
//	testplatform --state FILE scheduler request reschedule --node_uuid U
//	testplatform --state FILE tasks show --uuid ID
//	testplatform --state FILE commands ipmi power reset --node_uuid U
//
// Each CLI is its own prefix, as on the seed's platform: a test binds
// scheduler, cluster, commands and tasks to this executable with args
// `--state FILE <prefix>`. Every call is appended to the state's "calls"
// list; "fail_at" makes chosen calls of a command fail (exit 1), so tests
// can inject a platform hiccup. The file is locked
// while a call reads and rewrites it, so parallel calls are safe.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
)

// State is the simulated platform.
type State struct {
	Nodes   []Node           `json:"nodes"`
	Drained []string         `json:"drained"`
	VMs     map[string]*VM   `json:"vms"` // key "vcluster/name"
	Tasks   map[string]*Task `json:"tasks"`
	// RescheduleFail lists nodes whose reschedule task ends FAILURE.
	RescheduleFail []string `json:"reschedule_fail"`
	// ReschedulePolls is how many `tasks show` a reschedule task answers
	// RUNNING before its final status.
	ReschedulePolls int `json:"reschedule_polls"`
	// IPMIFail lists nodes whose power reset fails (exit 1).
	IPMIFail []string `json:"ipmi_fail"`
	// FailAt maps a command ("scheduler request show") to the calls of it
	// (1 = its first call) that fail with exit 1: a platform hiccup.
	FailAt map[string][]int `json:"fail_at,omitempty"`
	Resets []string         `json:"resets"`
	Calls  [][]string       `json:"calls"`
}

// Node is a cluster node.
type Node struct {
	UUID   string `json:"uuid"`
	Status string `json:"status"`
}

// VM is a virtual machine; State 1 is running (libvirt).
type VM struct {
	State float64 `json:"state"`
	// BootPolls is how many `request show` calls after a reboot request the
	// VM keeps its old state before it becomes running.
	BootPolls int `json:"boot_polls"`
	// BootLeft counts down the polls of a reboot in progress; 0 = none.
	BootLeft int `json:"boot_left"`
	// Requested records the states requested with `request state`.
	Requested []string `json:"requested"`
}

// Task is a platform task returned by reschedule.
type Task struct {
	ID        string `json:"task_id"`
	Name      string `json:"task_name"`
	PollsLeft int    `json:"polls_left"`
	Final     string `json:"final_status"`
	RunError  string `json:"run_error"`
	Message   string `json:"task_message"`
}

type usageError struct{ error }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 3 || args[0] != "--state" {
		fmt.Fprintln(stderr, "usage: testplatform --state FILE cli words… [--flag value…]")
		return 2
	}
	path, argv := args[1], args[2:]
	out, err := withState(path, func(s *State) (any, error) {
		s.Calls = append(s.Calls, argv)
		return dispatch(s, argv)
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	b, _ := json.Marshal(out)
	fmt.Fprintln(stdout, string(b))
	return 0
}

// withState runs f on the state under an exclusive lock and saves it (also
// when f fails, so failed calls are recorded).
func withState(path string, f func(*State) (any, error)) (any, error) {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	defer syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
	raw, err := io.ReadAll(fh)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	out, ferr := f(&s)
	b, err := json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := fh.Truncate(0); err != nil {
		return nil, err
	}
	if _, err := fh.WriteAt(b, 0); err != nil {
		return nil, err
	}
	return out, ferr
}

// parse splits argv into command words and --flag value pairs.
func parse(argv []string) (string, map[string]string, error) {
	var words []string
	flags := map[string]string{}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "--") {
			words = append(words, a)
			continue
		}
		if i+1 >= len(argv) {
			return "", nil, usageError{fmt.Errorf("flag %s needs a value", a)}
		}
		flags[strings.TrimPrefix(a, "--")] = argv[i+1]
		i++
	}
	return strings.Join(words, " "), flags, nil
}

func need(flags map[string]string, allowed ...string) error {
	for k := range flags {
		if !slices.Contains(allowed, k) {
			return usageError{fmt.Errorf("unknown flag --%s", k)}
		}
	}
	for _, k := range allowed {
		if _, ok := flags[k]; !ok {
			return usageError{fmt.Errorf("flag --%s is required", k)}
		}
	}
	return nil
}

func dispatch(s *State, argv []string) (any, error) {
	cmd, flags, err := parse(argv)
	if err != nil {
		return nil, err
	}
	if at := s.FailAt[cmd]; len(at) > 0 {
		n := 0 // calls of cmd so far, this one included
		for _, c := range s.Calls {
			if w, _, err := parse(c); err == nil && w == cmd {
				n++
			}
		}
		if slices.Contains(at, n) {
			return nil, fmt.Errorf("%s: injected failure: the platform API answered 502 Bad Gateway", cmd)
		}
	}
	switch cmd {
	case "cluster nodes list":
		return s.Nodes, need(flags)
	case "scheduler labels list":
		if len(s.Drained) == 0 {
			return map[string]any{}, need(flags)
		}
		return map[string]any{"system_drain_node=yes": map[string]any{"nodes": s.Drained}}, need(flags)
	case "scheduler request show":
		if err := need(flags, "name", "vcluster", "kind", "metrics"); err != nil {
			return nil, err
		}
		vm, err := s.vm(flags)
		if err != nil {
			return nil, err
		}
		if vm.BootLeft > 0 {
			if vm.BootLeft--; vm.BootLeft == 0 {
				vm.State = 1
			}
		}
		return map[string]any{"name": flags["name"], "vcluster": flags["vcluster"], "kind": "vm",
			"metrics": map[string]any{"libvirt_domain_info_vmstate": []any{map[string]any{"value": []any{1700000000, vm.State}}}}}, nil
	case "scheduler request state":
		if err := need(flags, "name", "vcluster", "kind", "state"); err != nil {
			return nil, err
		}
		vm, err := s.vm(flags)
		if err != nil {
			return nil, err
		}
		vm.Requested = append(vm.Requested, flags["state"])
		if flags["state"] == "reboot" {
			vm.BootLeft = vm.BootPolls + 1
		}
		return map[string]any{"name": flags["name"], "state": flags["state"], "result": "accepted"}, nil
	case "scheduler drain add", "scheduler drain del":
		if err := need(flags, "nodes"); err != nil {
			return nil, err
		}
		for _, n := range strings.Split(flags["nodes"], ",") {
			s.Drained = slices.DeleteFunc(s.Drained, func(x string) bool { return x == n })
			if strings.HasSuffix(cmd, "add") {
				s.Drained = append(s.Drained, n)
			}
		}
		return map[string]any{"nodes": s.Drained}, nil
	case "scheduler request reschedule":
		if err := need(flags, "node_uuid"); err != nil {
			return nil, err
		}
		node := flags["node_uuid"]
		t := &Task{ID: fmt.Sprintf("resched-%s-%d", node, len(s.Tasks)+1), Name: "reschedule", PollsLeft: s.ReschedulePolls, Final: "SUCCESS"}
		if slices.Contains(s.RescheduleFail, node) {
			t.Final, t.RunError, t.Message = "FAILURE", "no capacity to reschedule the VMs of node "+node, "2 VMs left on "+node
		}
		if s.Tasks == nil {
			s.Tasks = map[string]*Task{}
		}
		s.Tasks[t.ID] = t
		return map[string]any{"task_id": t.ID, "node_uuid": node}, nil
	case "tasks show":
		if err := need(flags, "uuid"); err != nil {
			return nil, err
		}
		t, ok := s.Tasks[flags["uuid"]]
		if !ok {
			return nil, fmt.Errorf("task %s not found", flags["uuid"])
		}
		status := t.Final
		if t.PollsLeft > 0 {
			t.PollsLeft--
			status = "RUNNING"
		}
		return map[string]any{"task_id": t.ID, "task_name": t.Name, "task_status": status, "run_error": t.RunError, "task_message": t.Message}, nil
	case "commands ipmi power reset":
		if err := need(flags, "node_uuid"); err != nil {
			return nil, err
		}
		node := flags["node_uuid"]
		if slices.Contains(s.IPMIFail, node) {
			return nil, fmt.Errorf("ipmi: BMC of node %s does not answer", node)
		}
		s.Resets = append(s.Resets, node)
		return map[string]any{"node_uuid": node, "result": "reset sent"}, nil
	}
	return nil, usageError{fmt.Errorf("unknown command %q", cmd)}
}

func (s *State) vm(flags map[string]string) (*VM, error) {
	if flags["kind"] != "vm" {
		return nil, usageError{fmt.Errorf("--kind %s: only vm is simulated", flags["kind"])}
	}
	vm, ok := s.VMs[flags["vcluster"]+"/"+flags["name"]]
	if !ok {
		return nil, fmt.Errorf("request %s not found in vcluster %s", flags["name"], flags["vcluster"])
	}
	return vm, nil
}
