package checker

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The leaves of a procedure: commands, templates, filters and templated
// values, each compiled at load and checked for undeclared vars.

func (p *parser) calls(n *yaml.Node, what string) *Calls {
	c := &Calls{}
	switch n.Kind {
	case yaml.ScalarNode:
		if cmd := p.command(n, what); cmd != nil {
			c.Commands = []*Command{cmd}
		}
	case yaml.SequenceNode:
		c.List = true
		if len(n.Content) == 0 {
			p.errf(n, "%s: apicall list is empty", what)
		}
		for _, e := range n.Content {
			if cmd := p.command(resolve(e), what); cmd != nil {
				c.Commands = append(c.Commands, cmd)
			}
		}
	default:
		p.errf(n, "%s: apicall must be a command string or a list of them", what)
	}
	return c
}

func (p *parser) command(n *yaml.Node, what string) *Command {
	s, ok := p.str(n, what+" apicall")
	if !ok {
		return nil
	}
	cmd, err := ParseCommand(s)
	if err != nil {
		p.errf(n, "%s: %v", what, err)
		return nil
	}
	p.checkRefs(n, what, cmd.Vars())
	return cmd
}

func (p *parser) template(n *yaml.Node, what string) *Template {
	s, ok := p.str(n, what)
	if !ok {
		return nil
	}
	t, err := ParseTemplate(s)
	if err != nil {
		p.errf(n, "%s: %v", what, err)
		return nil
	}
	p.checkRefs(n, what, t.Vars())
	return t
}

func (p *parser) filter(n *yaml.Node, what string) *Filter {
	s, ok := p.str(n, what+" filter")
	if !ok {
		return nil
	}
	f, err := CompileFilter(s)
	if err != nil {
		p.errf(n, "%s: %v", what, err)
		return nil
	}
	return f
}

func (p *parser) checkRefs(n *yaml.Node, what string, names []string) {
	for _, name := range names {
		if sn := SecretName(name); sn != "" {
			if !slices.Contains(p.secrets, sn) {
				p.secrets = append(p.secrets, sn)
			}
			continue
		}
		if name != VarDeps && name != VarDepsStatus && p.vars[name] == nil {
			p.errf(n, "%s: template uses unknown var %q (declare it in vars:)", what, name)
		}
	}
}

// value decodes a YAML value whose strings may be templates.
func (p *parser) value(n *yaml.Node, what string) *Value {
	raw, err := decodeValue(n)
	if err != nil {
		p.errf(n, "%s: %v", what, err)
		return &Value{}
	}
	return &Value{v: p.templatize(n, what, raw)}
}

func (p *parser) templatize(n *yaml.Node, what string, x any) any {
	switch t := x.(type) {
	case string:
		if !strings.Contains(t, "{{") {
			return t
		}
		tm, err := ParseTemplate(t)
		if err != nil {
			p.errf(n, "%s: %v", what, err)
			return t
		}
		p.checkRefs(n, what, tm.Vars())
		return tm
	case []any:
		for i := range t {
			t[i] = p.templatize(n, what, t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = p.templatize(n, what, t[k])
		}
	}
	return x
}

func decodeValue(n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return normalize(v)
}
