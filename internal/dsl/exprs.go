package dsl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
	"go.yaml.in/yaml/v3"
)

// templateOpts says how the register references of an expression are
// checked.
type templateOpts struct {
	// deferred checks against every register of the unit, after its tasks
	// (state_changes, output, vars.yml).
	deferred bool
	// allowSelf permits register.self (retry.until, failed_when,
	// changed_when).
	allowSelf bool
	// own is the register of the task being parsed, visible to its own
	// failed_when/changed_when/until.
	own string
}

// templates compiles every ${ } string under n in the unit's environment
// and checks its register references.
// It returns the static type of n when n is one string holding ${ } (see
// templateTypes), else nil.
func (p *parser) templates(u *unit, file string, n *yaml.Node, key string, opts templateOpts) *cel.Type {
	var top *cel.Type
	root := deref(n)
	p.walkStringNodes(file, n, key, func(sn *yaml.Node, path string) {
		s := sn.Value
		if !expr.HasInterpolation(s) {
			return
		}
		pos := posOf(file, sn)
		t, err := u.env.ParseTemplate(s)
		if err != nil {
			p.add(pos, path, fmt.Sprintf("%s: %v", path, err))
			return
		}
		p.checkRefs(u, pos, path, t.Refs(), opts)
		ct := p.templateTypes(u, file, sn, path, t, opts)
		if sn == root {
			top = ct
		}
	})
	return top
}

// predicate compiles a bare CEL predicate (when:, where:, failed_when:,
// changed_when:, retry.until) and returns its source; a YAML boolean is
// kept as "true" or "false".
func (p *parser) predicate(u *unit, file string, n *yaml.Node, key string, opts templateOpts) string {
	n = deref(n)
	pos := posOf(file, n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!bool" && n.Tag != "") {
		p.add(pos, key, fmt.Sprintf("%s must be a CEL expression (a string) or true/false, got %s", key, kindName(n)))
		return ""
	}
	src := n.Value
	if n.Tag == "!!bool" {
		var b bool
		if err := n.Decode(&b); err != nil {
			p.add(pos, key, fmt.Sprintf("%s: %v", key, err))
			return ""
		}
		src = fmt.Sprint(b)
	}
	if expr.HasInterpolation(src) {
		p.add(pos, key, fmt.Sprintf("%s is bare CEL, not a ${ } template: drop the ${ and }", key))
		return src
	}
	prog, err := u.env.CompileBool(src)
	if err != nil {
		p.add(pos, key, fmt.Sprintf("%s: %v", key, err))
		return src
	}
	p.checkRefs(u, pos, key, prog.Refs, opts)
	if n.Tag == "!!bool" {
		return src
	}
	if t := p.typeCheck(u, file, n, 0, key, src, opts); t != nil && !fitsCel(module.TypeBool, t) {
		p.add(pos, key, fmt.Sprintf("%s must be a boolean predicate, but %s is %s%s", key, src, expr.TypeName(t), boolHint(src, t)))
	}
	return src
}

// checkRefs checks the register references of one expression.
func (p *parser) checkRefs(u *unit, pos Pos, key string, refs expr.Refs, opts templateOpts) {
	if len(refs.Inputs) > 0 {
		u.inputUses = append(u.inputUses, exprUse{pos: pos, key: key, refs: refs})
	}
	if refs.RegisterSelf && !opts.allowSelf {
		p.add(pos, key, fmt.Sprintf("%s: register.self is only available in retry.until, failed_when and changed_when", key))
	}
	if opts.deferred {
		u.deferred = append(u.deferred, exprUse{pos: pos, key: key, refs: refs})
		return
	}
	for _, name := range refs.Registers {
		if u.defined[name] || name == opts.own {
			continue
		}
		hint := suggest(name, sortedKeys(u.defined))
		if u.kind == expr.KindDestiny {
			p.add(pos, key, fmt.Sprintf("%s: register.%s is not defined by an earlier task of destiny %s (a destiny sees only its own registers)%s", key, name, u.name, hint))
			continue
		}
		p.add(pos, key, fmt.Sprintf("%s: register.%s is not defined by an earlier task: add register: %s to a task before this one%s", key, name, name, hint))
	}
}

// checkInputs reports the expressions of u that read an input its input:
// does not declare: evaluation would fail on every host (no input can be
// given that is not declared). n is the input: node (nil when absent); an
// input: that is not a map is reported elsewhere and checks nothing.
func (p *parser) checkInputs(u *unit, n *yaml.Node) {
	var names []string
	if n = deref(n); n != nil {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			names = append(names, n.Content[i].Value)
		}
	}
	hint := " (no inputs are declared)"
	if len(names) > 0 {
		hint = " (declared: " + strings.Join(names, ", ") + ")"
	}
	for _, use := range u.inputUses {
		for _, name := range use.refs.Inputs {
			if slices.Contains(names, name) {
				continue
			}
			p.add(use.pos, use.key, fmt.Sprintf("%s: input.%s is not declared in input: of %s %s%s%s",
				use.key, name, u.kind, u.name, hint, suggest(name, names)))
		}
	}
}

// boolHint suggests the usual fix for a predicate of another type.
func boolHint(src string, t *cel.Type) string {
	switch t.Kind() {
	case types.StringKind:
		return fmt.Sprintf(": compare it, e.g. %s == \"…\" or %s != \"\"", src, src)
	case types.IntKind, types.UintKind, types.DoubleKind:
		return fmt.Sprintf(": compare it, e.g. %s > 0", src)
	case types.ListKind, types.MapKind:
		return fmt.Sprintf(": test it, e.g. size(%s) > 0", src)
	}
	return ""
}
