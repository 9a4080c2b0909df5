package devmode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDevModeConfigBindings: keeper dev --config takes the Checker's
// bindings from a keeper configuration file. A procedure calls a bound
// `platform` CLI, waits for the task id it returns through the status
// command `tasks show --uuid {id}` (resolved through the `tasks` binding,
// by its own prefix) and succeeds.
func TestDevModeConfigBindings(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "platform.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
case "$1 $2" in
  "platform start") echo '{"task_id": "t-42"}' ;;
  "tasks show") echo "{\"task_id\": \"$4\", \"task_status\": \"SUCCESS\", \"task_name\": \"platform job\"}" ;;
  *) echo "unknown: $*" >&2; exit 2 ;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "keeper.yaml")
	if err := os.WriteFile(cfgFile, []byte(`checker:
  bindings:
    - prefix: platform
      executable: `+script+`
      args: [platform]
      status_command: "tasks show --uuid {id}"
      timeout: 10s
    - prefix: tasks
      executable: `+script+`
      args: [tasks]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDevConfig(t, filepath.Join(dir, "dev"), 0, cfgFile)
	proc := filepath.Join(dir, "proc.yaml")
	if err := os.WriteFile(proc, []byte(`steps:
  start:
    action:
      apicall: "platform start"
      parse:
        - {filter: "@", op: push, var: "@deps"}
  check:
    conditions:
      - const: "{{@deps_status}}"
        expect:
          - {filter: "[0].task_status", op: "==", value: "SUCCESS"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := d.soulctl(t, "checker", "procedure", "create", "platform_job", "--file", proc); code != 0 {
		t.Fatalf("procedure create: %d %s %s", code, out, errs)
	}
	code, out, errs := d.soulctl(t, "checker", "procedure", "execute", "--name", "platform_job", "--json", "yes")
	if code != 0 {
		t.Fatalf("execute: %d %s %s", code, out, errs)
	}
	var ids []string
	if err := json.Unmarshal([]byte(out), &ids); err != nil || len(ids) != 1 {
		t.Fatalf("execute output %q: %v", out, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, errs = d.soulctl(t, "checker", "task", "show", ids[0], "-o", "json")
		var task struct {
			Status   string `json:"task_status"`
			RunError string `json:"run_error"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &task) != nil {
			t.Fatalf("task show: %d %s %s", code, out, errs)
		}
		if task.Status == "SUCCESS" {
			if !strings.Contains(out, "platform job t-42: SUCCESS") {
				t.Errorf("the step log does not show the platform task's status:\n%s", out)
			}
			return
		}
		if task.Status == "FAILURE" || time.Now().After(deadline) {
			t.Fatalf("task %s (%s):\n%s", task.Status, task.RunError, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
