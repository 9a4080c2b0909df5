package checker

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var tmplVars = map[string]any{
	"s":     "web 01",
	"n":     float64(3),
	"b":     true,
	"nul":   nil,
	"list":  []any{"u1", "u2"},
	"obj":   map[string]any{"a": float64(1)},
	"@deps": []any{"t1"},
	"@deps_status": []any{
		map[string]any{"task_id": "t1", "task_name": "fence_node", "task_status": "SUCCESS", "run_error": "", "task_message": ""},
		map[string]any{"task_id": "t2", "task_name": "fence_node", "task_status": "FAILURE", "run_error": "boom", "task_message": "node n2"},
		map[string]any{"task_id": "t3", "task_name": "reschedule", "task_status": "TIMEOUT", "run_error": nil, "task_message": nil},
	},
}

func TestTemplateRender(t *testing.T) {
	tests := []struct{ src, want string }{
		{"plain text", "plain text"},
		{"{{ s }}", "web 01"},
		{"{{s}}!", "web 01!"},
		{"n={{ n }} b={{ b }} nul={{ nul }}", "n=3 b=true nul=null"},
		{"{{ list }}", `["u1","u2"]`},
		{"{{*list}}", `["u1","u2"]`},
		{"{{*s}}", `"web 01"`},
		{"{{ obj }}", `{"a":1}`},
		{`{ "node": {{*list}}, "x": {{b}} }`, `{ "node": ["u1","u2"], "x": true }`},
		{`{"a":{{n}}}`, `{"a":3}`},
		{"{{{n}}}", "{3}"},
		{"{{ @deps }}", `["t1"]`},
		{"{{*list | @}}", "u1\nu2"},
		{"{{*nul | @}}", ""},
		{"{{*obj | a}}", "1"},
		{"{{*@deps_status | {id: task_id}}}", "{\"id\":\"t1\"}\n{\"id\":\"t2\"}\n{\"id\":\"t3\"}"},
		// The seed's error-report idiom.
		{"{{*@deps_status | (task_status != `SUCCESS` && join(': ', ['Error', task_name || '', run_error || '', task_message || ''])) || ''}}",
			"Error: fence_node: boom: node n2\nError: reschedule: : "},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			tm, err := ParseTemplate(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tm.Render(tmplVars)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTemplateValueIsTypedWhenWhole(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		{"{{ b }}", true},
		{"{{n}}", float64(3)},
		{"{{@deps_status}}", tmplVars["@deps_status"]},
		{"{{*list}}", []any{"u1", "u2"}},
		{" {{ b }}", " true"},
		{"{{*list | @}}", "u1\nu2"},
	}
	for _, tt := range tests {
		tm, err := ParseTemplate(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tm.Value(tmplVars)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.src, diff)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	for _, src := range []string{"{{", "{{ }}", "{{ 1x }}", "{{ a b }}", "{{ a | b }}", "{{*a |}}", "{{*a | length(}}", "{{*a ? b}}", "{{*a | 'x}}", "{{ a } }}"} {
		if _, err := ParseTemplate(src); err == nil {
			t.Errorf("ParseTemplate(%q) succeeded", src)
		}
	}
	tm, _ := ParseTemplate("{{ missing }}")
	if _, err := tm.Render(tmplVars); err == nil || !strings.Contains(err.Error(), `unknown var "missing"`) {
		t.Errorf("render of an unknown var: %v", err)
	}
	tm, _ = ParseTemplate("{{*list | length(@)}}")
	if _, err := tm.Render(tmplVars); err != nil {
		t.Errorf("length of strings: %v", err)
	}
	tm, _ = ParseTemplate("{{*obj | abs(a)}} {{*list | abs(@)}}")
	if _, err := tm.Render(tmplVars); err == nil {
		t.Error("abs of a string should fail at render")
	}
}

func TestCommandArgv(t *testing.T) {
	vars := map[string]any{"vm": "web 01", "list": []any{"a", "b"}, "b": false, "q": `it's "x"`}
	tests := []struct {
		src  string
		want []string
	}{
		{"scheduler request show --name {{ vm }} --kind vm", []string{"scheduler", "request", "show", "--name", "web 01", "--kind", "vm"}},
		{`checker procedure execute --name fence_node --vars '{ "node": {{*list}}, "x": {{b}} }' --json yes`,
			[]string{"checker", "procedure", "execute", "--name", "fence_node", "--vars", `{ "node": ["a","b"], "x": false }`, "--json", "yes"}},
		{`a "b \"c\" \\ \n" d\ e ''`, []string{"a", `b "c" \ \n`, "d e", ""}},
		{"x --v={{ q }}", []string{"x", `--v=it's "x"`}},
		{"  spaced\t\targs  ", []string{"spaced", "args"}},
		{"x{{vm}}y", []string{"xweb 01y"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			c, err := ParseCommand(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Argv(vars)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"", "   ", "a 'b", `a "b`, "a {{ b"} {
		if _, err := ParseCommand(bad); err == nil {
			t.Errorf("ParseCommand(%q) succeeded", bad)
		}
	}
}

// TestCommandArgvRefusesOptionValues: a var cannot add an option to the
// command it is rendered into; as a flag's value (--flag={{v}}) or a
// negative number it may start with '-'.
func TestCommandArgvRefusesOptionValues(t *testing.T) {
	vars := map[string]any{"node": "--all", "dash": "-", "end": "--", "n": -3, "f": "-2.5e3", "ok": "web-1"}
	for _, src := range []string{
		"commands ipmi power reset {{node}}",
		"commands ipmi power reset --node_uuid {{node}}",
		"scheduler drain add --nodes {{ dash }}",
		"scheduler drain add {{end}} x",
		"x {{node}}suffix",
	} {
		c, err := ParseCommand(src)
		if err != nil {
			t.Fatal(err)
		}
		if argv, err := c.Argv(vars); err == nil || !strings.Contains(err.Error(), "read as an option") {
			t.Errorf("%s: argv %q, %v; want refused", src, argv, err)
		}
	}
	for src, want := range map[string][]string{
		"x --node_uuid={{node}}": {"x", "--node_uuid=--all"},
		"x --count {{n}} {{f}}":  {"x", "--count", "-3", "-2.5e3"},
		"x prefix{{node}}":       {"x", "prefix--all"},
		"x {{ok}}":               {"x", "web-1"},
	} {
		c, err := ParseCommand(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Argv(vars)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: argv (-want +got):\n%s", src, diff)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		"plain", "{{ s }}", "{{*list}}", "{{*list | @}}", `{ "node": {{*list}} }`, "{{{n}}}", "{{*@deps_status | {a: task_id}}}",
		"{{*@deps_status | (task_status != `SUCCESS` && join(': ', ['Error', task_name || ''])) || ''}}",
		"{{", "}}", "{{ a } }}", "{{*x | 'a}}'}}", "{{*list | `}}`}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := ParseTemplate(src)
		if err != nil {
			return
		}
		if !strings.Contains(src, "{{") {
			if got, err := tm.Render(nil); err != nil || got != src {
				t.Fatalf("literal %q rendered %q, %v", src, got, err)
			}
		}
		vars := map[string]any{}
		for _, name := range tm.Vars() {
			vars[name] = tmplVars["@deps_status"]
		}
		out, err := tm.Render(vars)
		if err == nil && tm.IsLiteral() && out != src {
			t.Fatalf("literal template %q rendered %q", src, out)
		}
		_, _ = tm.Value(vars)
		// The same text as a command line must not panic either.
		if c, err := ParseCommand(src); err == nil {
			_, _ = c.Argv(vars)
		}
	})
}
