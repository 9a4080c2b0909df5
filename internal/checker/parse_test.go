package checker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSeedProcedures(t *testing.T) {
	tests := []struct {
		file     string
		steps    []string
		vip      bool
		timeout  time.Duration
		wantVars map[string]string // name → type/visibility
	}{
		{"vm_monitoring.fixed.yaml", []string{"save_value", "reboot-on-error", "wait-for-reboot"}, false, 0,
			map[string]string{"value": "number/private", "vcl": "string/public", "vmname": "string/public", "state": "string/public"}},
		{"cluster_fencing.yaml", []string{"collect-down-nodes", "process-down-nodes", "check-errors"}, true, 0,
			map[string]string{"exclude_current_node": "boolean/public", "down_nodes": "array[string]/private"}},
		{"fence_node.yaml", []string{"restart-node", "exclude-node", "reschedule-vms", "reinclude-node", "check-errors"}, true, 600 * time.Second,
			map[string]string{"node": "string/public", "exclude_current_node": "boolean/public"}},
		{"redis_restart_if_critical.yaml", []string{"find-critical-hosts", "heal-if-it-stays-critical"}, false, 240 * time.Second,
			map[string]string{"incarnation": "string/public", "critical": "array[string]/private"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := ParseProcedure(tt.file, []byte(readExample(t, tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, s := range p.Steps {
				steps = append(steps, s.Name)
			}
			if diff := cmp.Diff(tt.steps, steps); diff != "" {
				t.Errorf("steps in YAML order (-want +got):\n%s", diff)
			}
			if p.Config.RunOnVIP != tt.vip || p.Config.Timeout != tt.timeout {
				t.Errorf("config %+v", p.Config)
			}
			vars := map[string]string{}
			for _, v := range p.Vars {
				vis := "private"
				if v.Public {
					vis = "public"
				}
				vars[v.Name] = string(v.Type) + "/" + vis
			}
			if diff := cmp.Diff(tt.wantVars, vars); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAttemptsAndHandlers(t *testing.T) {
	p, err := ParseProcedure("cf", []byte(readExample(t, "cluster_fencing.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Steps[0].Conditions[0]
	if c.Attempts != (Attempts{Min: 2, Max: 2, Interval: 10 * time.Second}) {
		t.Errorf("attempts %+v", c.Attempts)
	}
	if c.OnError[ErrAttemptsLimitReached] != HandlerExit || !c.Calls.List || len(c.Calls.Commands) != 2 {
		t.Errorf("condition %+v", c)
	}
	if got := p.Steps[2].Conditions[0].Attempts; got != (Attempts{Min: 1, Max: 1}) {
		t.Errorf("check-errors attempts %+v", got)
	}
	if p.Steps[1].Conditions != nil || p.Steps[1].Action == nil || p.Steps[2].Action != nil {
		t.Errorf("process-down-nodes is action-only and check-errors a pure gate")
	}
}

// base is a valid procedure the invalid cases below edit.
const base = `config:
  run-on-vip: true
  timeout: 60
vars:
  n:
    type: string
    visibility: public
  list:
    type: array[string]
steps:
  s:
    conditions:
      - apicall: "cluster nodes list"
        expect:
          - filter: "length(@)"
            op: ">"
            value: 0
        on-error:
          - error-type: AttemptsLimitReached
            handler: _exit
    action:
      apicall: "scheduler drain add --nodes {{ n }}"
      parse:
        - filter: "nodes"
          op: store
          var: list
`

func TestParseRefusesInvalidProcedures(t *testing.T) {
	if _, err := ParseProcedure("p", []byte(base)); err != nil {
		t.Fatalf("base does not parse: %v", err)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown op", `op: ">"`, `op: "=~"`, `p:16:17: step s condition 1 expect: unknown op "=~"`},
		{"bad JMESPath", `"length(@)"`, `"length(@"`, `p:15:21: step s condition 1 expect: invalid JMESPath "length(@"`},
		{"unknown function", `"length(@)"`, `"size(@)"`, `unknown function size()`},
		{"unknown handler", `handler: _exit`, `handler: _retry`, `p:20:22: step s condition 1 on-error: unknown handler "_retry"`},
		{"unknown error type", `error-type: AttemptsLimitReached`, `error-type: Timeout`, `unknown error-type "Timeout"`},
		{"unknown var in template", `{{ n }}`, `{{ node }}`, `p:22:16: step s action: template uses unknown var "node" (declare it in vars:)`},
		{"unknown var in star template", `{{ n }}`, `{{*nodes | @}}`, `template uses unknown var "nodes"`},
		{"store to an undeclared var", `var: list`, `var: other`, `p:26:16: step s action parse: var "other" is not declared in vars:`},
		{"push to a scalar", "op: store\n          var: list", "op: push\n          var: n", `push needs an array var; n is string`},
		{"store to @deps", `var: list`, `var: "@deps"`, `@deps only takes push`},
		{"unknown key", `    action:`, "    retry: 3\n    action:", `p:21:5: unknown key "retry" in step s (allowed: conditions, action)`},
		{"unknown top key", `config:`, "name: x\nconfig:", `unknown key "name" in the procedure`},
		{"unknown var type", `type: array[string]`, `type: list`, `var list: unknown type "list"`},
		{"bad visibility", `visibility: public`, `visibility: open`, `unknown visibility "open"`},
		{"apicall and const", `- apicall: "cluster nodes list"`, "- apicall: \"cluster nodes list\"\n        const: 1", `apicall and const are exclusive`},
		{"no expect", "        expect:\n          - filter: \"length(@)\"\n            op: \">\"\n            value: 0\n", "", `needs expect:`},
		{"min above max", `        on-error:`, "        attempts: {min: 3, max: 2}\n        on-error:", `min (3) is greater than max (2)`},
		{"zero timeout", `timeout: 60`, `timeout: 0`, `config.timeout must be > 0`},
		{"string timeout", `timeout: 60`, `timeout: "60"`, `config.timeout must be a number of seconds`},
		{"bad default", `visibility: public`, "visibility: public\n    default: 3", `var n: default 3 is not of type string`},
		{"unterminated quote", `--nodes {{ n }}"`, `--nodes '{{ n }}"`, `unterminated ' quote`},
		{"unterminated placeholder", `{{ n }}`, `{{ n`, `unterminated {{`},
		{"expression without star", `{{ n }}`, `{{ n | @ }}`, `only {{*var | expr}} takes an expression`},
		{"duplicate step", "  s:\n    conditions:", "  s:\n    action: {log: x}\n  s:\n    conditions:", `duplicate key "s" in steps`},
		{"empty step", "steps:\n", "steps:\n  empty: {}\n", `step empty has neither conditions nor action`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(base, tt.old, tt.new, 1)
			if src == base {
				t.Fatalf("edit %q not applied", tt.old)
			}
			_, err := ParseProcedure("p", []byte(src))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%s\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseReportsEveryIssue(t *testing.T) {
	src := strings.NewReplacer(`op: ">"`, `op: "~"`, `handler: _exit`, `handler: _nope`, `{{ n }}`, `{{ x }}`).Replace(base)
	_, err := ParseProcedure("p", []byte(src))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Issues) != 3 {
		t.Fatalf("err = %v, want 3 issues", err)
	}
	for i := 1; i < len(ve.Issues); i++ {
		if ve.Issues[i].Line < ve.Issues[i-1].Line {
			t.Errorf("issues not sorted by line: %+v", ve.Issues)
		}
	}
}

func TestSyntaxErrorWithoutHint(t *testing.T) {
	_, err := ParseProcedure("p", []byte("steps:\n  s: [\n"))
	if err == nil || !strings.Contains(err.Error(), "invalid YAML") || strings.Contains(err.Error(), "mis-indented") {
		t.Errorf("err = %v", err)
	}
}

func TestSyntaxErrorTabHint(t *testing.T) {
	_, err := ParseProcedure("p", []byte("vars:\n  \tn: {type: string}\nsteps: {}\n"))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Issues) != 1 {
		t.Fatalf("err = %v, want 1 issue", err)
	}
	is := ve.Issues[0]
	if is.Line != 2 || is.Col != 3 || !strings.Contains(is.Msg, "tabs are not allowed") || strings.Contains(is.Msg, "line 2") {
		t.Errorf("issue = %+v, want 2:3 with the tab hint and no repeated line", is)
	}
}
