package core

import (
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// TestOutputSchemaDeclared: every core module declares its output schema
// (possibly empty), every field has a type and a description, and none
// shadows a common result field — the DSL type checker types
// register.<name>.<field> from these.
func TestOutputSchemaDeclared(t *testing.T) {
	for _, name := range module.Names() {
		m, _ := module.Lookup(name)
		s := m.Schema()
		if s.Output == nil {
			t.Errorf("%s declares no output schema", name)
		}
		for f, spec := range s.Output {
			if spec.Type == "" || spec.Description == "" {
				t.Errorf("%s: output field %s lacks a type or description", name, f)
			}
			if _, common := module.ResultFields[f]; common {
				t.Errorf("%s: output field %s shadows a common result field", name, f)
			}
		}
	}
}

// TestOutputSchemaMatchesResults runs modules that need no root and checks
// that every field they return is declared with a type its value has.
func TestOutputSchemaMatchesResults(t *testing.T) {
	root := t.TempDir()
	env := &module.Env{Root: root}
	cases := []struct {
		name   string
		params map[string]any
	}{
		{"core.test.echo", map[string]any{"message": "hi"}},
		{"core.exec.run", map[string]any{"command": "echo hi"}},
		{"core.cmd.shell", map[string]any{"cmd": "true"}},
		{"core.file.present", map[string]any{"path": "/a.txt", "content": "x\n", "mode": "0644"}},
		{"core.file.directory", map[string]any{"path": "/d", "mode": "0755"}},
		{"core.file.absent", map[string]any{"path": "/a.txt"}},
	}
	for _, c := range cases {
		res := run(t, c.name, c.params, env)
		m, _ := module.Lookup(c.name)
		out := m.Schema().Output
		if len(res.Data) == 0 {
			t.Errorf("%s returned no module-specific fields", c.name)
		}
		for k, v := range res.Data {
			spec, ok := out[k]
			if !ok {
				t.Errorf("%s returns field %q its output schema does not declare", c.name, k)
				continue
			}
			if !module.HasType(spec.Type, v) {
				t.Errorf("%s: field %q = %#v does not have the declared type %s", c.name, k, v, spec.Type)
			}
		}
	}
}
