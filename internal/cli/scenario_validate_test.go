package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// writeRepo creates a service repository from path → content.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runSoulctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

var invalidRepo = map[string]string{
	"service.yml": "name: broken\n",
	"scenario/restart/main.yml": `tasks:
  - name: probe
    module: core.exec.run
    register: role
    params:
      command: "redis-cli role"
  - name: restart
    module: core.service.restarted
    onchange: [role]
    serial: 0
    params:
      name: redis-server
`,
}

func TestScenarioValidate(t *testing.T) {
	bad := writeRepo(t, invalidRepo)
	good := writeRepo(t, map[string]string{
		"service.yml":         "name: fine\n",
		"scenario/a/main.yml": "tasks:\n  - module: core.test.ping\n  - apply: {destiny: d}\n",
		"scenario/b/main.yml": "tasks:\n  - module: core.test.ping\n",
		"destiny/d/main.yml":  "tasks:\n  - module: core.test.ping\n",
	})
	badRule := writeRepo(t, map[string]string{
		"service.yml":         "name: healing\n",
		"scenario/a/main.yml": "tasks:\n  - module: core.test.ping\n",
		"rules/heal.yml":      "on: health.changed\nif: event.chekc == \"daemon\"\ndo: {run: {scenario: a}}\ncooldown: 1m\nmax_per_hour: 1\nmax_concurrent: 1\n",
	})
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{
			name:       "valid repo",
			args:       []string{"scenario", "validate", good},
			wantCode:   0,
			wantStdout: "ok: service fine — 2 scenarios, 1 destiny, 4 tasks\n",
		},
		{
			name:       "seed 002 my-service example",
			args:       []string{"scenario", "validate", "../../examples/my-service"},
			wantCode:   0,
			wantStdout: "ok: service my-service — 1 scenario, 0 destinies, 2 tasks\n",
		},
		{
			name:       "self-healing example with its rules",
			args:       []string{"scenario", "validate", "../../examples/self-healing"},
			wantCode:   0,
			wantStdout: "ok: service self-healing — 2 scenarios, 0 destinies, 3 tasks, 3 rules\n",
		},
		{
			name:       "invalid rule file",
			args:       []string{"scenario", "validate", badRule},
			wantCode:   2,
			wantStdout: filepath.Join(badRule, "rules/heal.yml") + ":2:5: if: col 6: event(health.changed) has no field chekc (did you mean check?)\n",
			wantStderr: "error: 1 problem in " + badRule + "\n",
		},
		{
			name:     "invalid repo",
			args:     []string{"scenario", "validate", bad},
			wantCode: 2,
			wantStdout: filepath.Join(bad, "scenario/restart/main.yml") + ":9:5: unknown key onchange in task (did you mean onchanges?)\n" +
				filepath.Join(bad, "scenario/restart/main.yml") + `:10:13: serial: must be a positive integer (hosts per wave) or a percentage "P%" with P in (0,100], got integer 0` + "\n",
			wantStderr: "error: 2 problems in " + bad + "\n",
		},
		{
			name:       "missing directory",
			args:       []string{"scenario", "validate", filepath.Join(bad, "nope")},
			wantCode:   2,
			wantStdout: filepath.Join(bad, "nope") + ": cannot read service repository: stat " + filepath.Join(bad, "nope") + ": no such file or directory\n",
			wantStderr: "error: 1 problem in " + filepath.Join(bad, "nope") + "\n",
		},
		{
			name:       "no argument",
			args:       []string{"scenario", "validate"},
			wantCode:   2,
			wantStderr: "error: accepts 1 arg(s), received 0\n",
		},
		{
			name:       "unknown output format",
			args:       []string{"scenario", "validate", "-o", "xml", bad},
			wantCode:   2,
			wantStderr: "error: unknown output format \"xml\": use table, json or yaml\n",
		},
		{
			name:       "valid repo as JSON is an empty list",
			args:       []string{"-o", "json", "scenario", "validate", "../../examples/the-service"},
			wantCode:   0,
			wantStdout: "[]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runSoulctl(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if diff := cmp.Diff(tt.wantStdout, stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

type problemOut struct {
	File    string `json:"file" yaml:"file"`
	Line    int    `json:"line" yaml:"line"`
	Col     int    `json:"col" yaml:"col"`
	Key     string `json:"key" yaml:"key"`
	Message string `json:"message" yaml:"message"`
}

func TestScenarioValidateStructuredOutput(t *testing.T) {
	bad := writeRepo(t, invalidRepo)
	file := filepath.Join(bad, "scenario/restart/main.yml")
	want := []problemOut{
		{File: file, Line: 9, Col: 5, Key: "onchange", Message: "unknown key onchange in task (did you mean onchanges?)"},
		{File: file, Line: 10, Col: 13, Key: "serial", Message: `serial: must be a positive integer (hosts per wave) or a percentage "P%" with P in (0,100], got integer 0`},
	}
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			code, stdout, _ := runSoulctl(t, "scenario", "validate", "-o", format, bad)
			if code != 2 {
				t.Fatalf("exit code = %d, want 2", code)
			}
			var got []problemOut
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(stdout), &got)
			} else {
				err = yaml.Unmarshal([]byte(stdout), &got)
			}
			if err != nil {
				t.Fatalf("decoding %s output %q: %v", format, stdout, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScenarioIsAParentCommand(t *testing.T) {
	root := NewRoot(&Globals{})
	c, _, err := root.Find([]string{"scenario", "validate"})
	if err != nil || c.Name() != "validate" {
		t.Fatalf("soulctl scenario validate not found: %v", err)
	}
	if !strings.Contains(c.Parent().Short, "offline") {
		t.Errorf("scenario parent Short = %q", c.Parent().Short)
	}
}

// TestScenarioValidateWarnsUnquotedShellInput (audit L7): an input
// interpolated unquoted into a shell command line is a warning with
// file:line:col and the fix; validation still passes; shquote() silences it.
func TestScenarioValidateWarnsUnquotedShellInput(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"service.yml": "name: shell\n",
		"scenario/s/main.yml": `input:
  x: {type: string, default: world}
tasks:
  - module: core.exec.run
    params: {command: "echo hello ${ input.x }"}
  - module: core.cmd.shell
    params: {cmd: "echo ${ shquote(input.x) } ${ run.id }"}
`,
	})
	code, stdout, stderr := runSoulctl(t, "scenario", "validate", repo)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := filepath.Join(repo, "scenario/s/main.yml") + ":5:38: warning: params.command: ${ input.x } is put unquoted into a /bin/sh command line: an input value holding ; or $( ) would run as shell code; write ${ shquote(input.x) }, or run the program with cmd: and args: (no shell)\n" +
		"ok: service shell — 1 scenario, 0 destinies, 2 tasks\n"
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	code, stdout, stderr = runSoulctl(t, "-o", "json", "scenario", "validate", repo)
	if code != 0 || stdout != "[]\n" || !strings.Contains(stderr, "warning: params.command") {
		t.Errorf("json: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
