package dsl

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/jinja"
	"github.com/soulstack/soulstack/internal/module"
	"go.yaml.in/yaml/v3"
)

// moduleCall parses module: and params: and checks the params against the
// module's declared schema.
func (p *parser) moduleCall(u *unit, file string, t *Task, modNode, paramsNode *yaml.Node) {
	name, ok := p.str(file, modNode, "module")
	if !ok {
		return
	}
	t.Module = name
	modPos := posOf(file, deref(modNode))
	var ents []entry
	if paramsNode != nil {
		ents, ok = p.mapping(file, paramsNode, "params")
		if !ok {
			return
		}
	}
	t.Params = make(map[string]any, len(ents))
	exprTypes := map[string]*cel.Type{}
	known, _ := u.moduleSchema(name)
	for _, e := range ents {
		if n := deref(e.value); known.Params[e.key].CheckSource != nil && n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			if err := known.Params[e.key].CheckSource(n.Value); err != nil {
				// Reported instead of what the ${ } would say as an
				// expression.
				p.add(posOf(file, n), "params."+e.key, fmt.Sprintf("param %s of %s: %v", e.key, name, err))
				t.Params[e.key] = p.value(file, e.value)
				continue
			}
		}
		exprTypes[e.key] = p.templates(u, file, e.value, "params."+e.key, templateOpts{})
		t.Params[e.key] = p.value(file, e.value)
	}
	schema, ok := u.moduleSchema(name)
	if !ok && p.brokenMods[name] {
		return
	}
	if !ok {
		p.add(modPos, "module", u.unknownModule(name))
		return
	}
	switch {
	case schema.KeeperSide && u.kind == expr.KindDestiny:
		p.add(modPos, "module", fmt.Sprintf("%s runs inside the Keeper and cannot be used in a destiny: call it from a scenario task with on: keeper", name))
	case schema.KeeperSide && (t.On == nil || !t.On.Keeper):
		p.add(modPos, "module", fmt.Sprintf("%s runs inside the Keeper: add on: keeper to this task", name))
	case schema.Unconfinable && t.On != nil && t.On.Keeper:
		p.add(modPos, "module", fmt.Sprintf("%s changes host-global state and cannot run on: keeper (the Keeper is not a member host): drop on: keeper", name))
	case schema.RunsProgram && t.On != nil && t.On.Keeper:
		p.add(modPos, "module", fmt.Sprintf("%s runs a program and cannot run on: keeper (the Keeper is not a member host): drop on: keeper", name))
	}
	paramsPos := modPos
	if paramsNode != nil {
		paramsPos = posOf(file, deref(paramsNode))
	}
	accepted := sortedKeys(schema.Params)
	for _, e := range ents {
		key := "params." + e.key
		decl, ok := schema.Params[e.key]
		if !ok {
			p.add(e.kpos, key, fmt.Sprintf("%s has no param %s (accepted: %s)%s", name, e.key, strings.Join(accepted, ", "), suggest(e.key, accepted)))
			continue
		}
		if isNull(e.value) {
			continue
		}
		if !p.fitsType(u, decl.Type, e.value) {
			p.add(posOf(file, deref(e.value)), key, fmt.Sprintf("param %s of %s must be %s, got %s%s", e.key, name, typeDesc(decl.Type), kindName(e.value), typeHint(decl.Type, e.value)))
		} else if ct := exprTypes[e.key]; p.wholeExpr(u, e.value) && !fitsCel(decl.Type, ct) {
			p.add(posOf(file, deref(e.value)), key, fmt.Sprintf("param %s of %s must be %s, but %s is %s%s", e.key, name, typeDesc(decl.Type), strings.TrimSpace(deref(e.value).Value), expr.TypeName(ct), convertHint(decl.Type, ct)))
		} else if n := deref(e.value); decl.Check != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" && !expr.HasInterpolation(n.Value) {
			if err := decl.Check(n.Value); err != nil {
				p.add(posOf(file, n), key, fmt.Sprintf("param %s of %s: %v", e.key, name, err))
			}
		}
	}
	given := func(k string) bool { return t.Params[k] != nil }
	for _, k := range accepted {
		if schema.Params[k].Required && !given(k) {
			desc := ""
			if d := schema.Params[k].Description; d != "" {
				desc = " (" + d + ")"
			}
			p.add(paramsPos, "params."+k, fmt.Sprintf("%s needs param %s%s", name, k, desc))
		}
	}
	for _, g := range schema.ExactlyOne {
		var have []string
		for _, k := range g {
			if given(k) {
				have = append(have, k)
			}
		}
		switch {
		case len(have) == 0:
			p.add(paramsPos, "params", fmt.Sprintf("%s needs exactly one of params %s", name, strings.Join(g, ", ")))
		case len(have) > 1:
			p.add(paramsPos, "params", fmt.Sprintf("%s takes exactly one of params %s, but %s are given: keep one", name, strings.Join(g, ", "), strings.Join(have, " and ")))
		}
	}
	for _, g := range schema.AtLeastOne {
		n := 0
		for _, k := range g {
			if given(k) {
				n++
			}
		}
		if n == 0 {
			p.add(paramsPos, "params", fmt.Sprintf("%s needs at least one of params %s", name, strings.Join(g, ", ")))
		}
	}
	for _, e := range ents {
		if (name == "core.exec.run" && e.key == "command") || (name == "core.cmd.shell" && e.key == "cmd") {
			p.shellLine(u, file, name, "params."+e.key, e.value)
		}
	}
	if TemplateModule(name) {
		p.templateParams(u, file, ents)
	}
}

// TemplateModule tells whether a module renders a template of the
// scenario or destiny (its "template" param): its work carries the unit's
// files and the template data, and its diff is withheld when that data
// holds a secret.
func TemplateModule(name string) bool {
	return name == "core.file.rendered" || name == "core.systemd.unit"
}

// templateFile checks that a literal template path exists in the unit.
func (p *parser) templateFile(u *unit, file string, n *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" || expr.HasInterpolation(n.Value) {
		return
	}
	pos := posOf(file, n)
	clean := path.Clean(n.Value)
	if path.IsAbs(n.Value) || clean == ".." || strings.HasPrefix(clean, "../") {
		p.add(pos, "params.template", fmt.Sprintf("template %s must be a path relative to %s (e.g. templates/x.conf.tmpl)", n.Value, u.dir))
		return
	}
	if _, ok := u.files[clean]; !ok {
		var have []string
		for f := range u.files {
			if strings.HasPrefix(f, "templates/") {
				have = append(have, f)
			}
		}
		sort.Strings(have)
		p.add(pos, "params.template", fmt.Sprintf("template %s does not exist in %s%s", n.Value, u.dir, suggest(clean, have)))
	}
}

// wholeExpr reports whether n is a string that is exactly one ${ }
// expression (its type is known only at run time). Templates that do not
// parse count too: they are reported on their own.
func (p *parser) wholeExpr(u *unit, n *yaml.Node) bool {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !expr.HasInterpolation(n.Value) {
		return false
	}
	t, err := u.env.ParseTemplate(n.Value)
	return err != nil || t.Whole()
}

// fitsType checks a literal param value against its declared type.
func (p *parser) fitsType(u *unit, t module.ParamType, n *yaml.Node) bool {
	n = deref(n)
	if t == module.TypeAny || t == "" || p.wholeExpr(u, n) {
		return true
	}
	scalar := n != nil && n.Kind == yaml.ScalarNode
	switch t {
	case module.TypeString:
		return scalar && n.Tag == "!!str"
	case module.TypeInt:
		return scalar && n.Tag == "!!int"
	case module.TypeNumber:
		return scalar && (n.Tag == "!!int" || n.Tag == "!!float")
	case module.TypeBool:
		return scalar && n.Tag == "!!bool"
	case module.TypeList:
		return n != nil && n.Kind == yaml.SequenceNode
	case module.TypeMap:
		return n != nil && n.Kind == yaml.MappingNode
	case module.TypeStrList:
		if n == nil || n.Kind != yaml.SequenceNode {
			return false
		}
		for _, it := range n.Content {
			it = deref(it)
			if !(it != nil && it.Kind == yaml.ScalarNode && it.Tag == "!!str") {
				return false
			}
		}
		return true
	}
	return true
}

func typeDesc(t module.ParamType) string {
	switch t {
	case module.TypeString:
		return "a string"
	case module.TypeInt:
		return "an integer"
	case module.TypeNumber:
		return "a number"
	case module.TypeBool:
		return "true or false"
	case module.TypeList:
		return "a list"
	case module.TypeMap:
		return "a map"
	case module.TypeStrList:
		return "a list of strings"
	}
	return string(t)
}

// typeHint adds advice for the classic YAML traps.
func typeHint(t module.ParamType, n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	if t == module.TypeString && (n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!bool") {
		return fmt.Sprintf(` (quote it: "%s")`, n.Value)
	}
	return ""
}

// apply parses apply: {destiny, input} and checks the input against the
// destiny's declared input.
func (p *parser) apply(u *unit, file string, t *Task, n *yaml.Node) *Apply {
	ents, ok := p.mapping(file, n, "apply")
	if !ok {
		return nil
	}
	a := &Apply{Pos: posOf(file, deref(n))}
	var inputNode *yaml.Node
	var destPos Pos
	for _, e := range ents {
		switch e.key {
		case "destiny":
			a.Destiny, _ = p.str(file, e.value, "apply.destiny")
			destPos = posOf(file, deref(e.value))
		case "input":
			inputNode = e.value
		default:
			p.unknownKey(e, applyKeys, "apply")
		}
	}
	if !hasKey(ents, "destiny") {
		p.add(a.Pos, "apply.destiny", "apply: needs destiny: (the name of a directory under destiny/)")
	}
	var inEnts []entry
	if inputNode != nil {
		if inEnts, ok = p.mapping(file, inputNode, "apply.input"); !ok {
			return a
		}
	}
	a.Input = make(map[string]any, len(inEnts))
	exprTypes := map[string]*cel.Type{}
	for _, e := range inEnts {
		exprTypes[e.key] = p.templates(u, file, e.value, "apply.input."+e.key, templateOpts{})
		a.Input[e.key] = p.value(file, e.value)
	}
	if a.Destiny == "" || u.svc == nil {
		return a
	}
	d, ok := u.svc.Destinies[a.Destiny]
	if !ok {
		p.add(destPos, "apply.destiny", fmt.Sprintf("destiny %s does not exist: create destiny/%s/main.yml%s", a.Destiny, a.Destiny, suggest(a.Destiny, sortedKeys(u.svc.Destinies))))
		return a
	}
	for _, e := range inEnts {
		key := "apply.input." + e.key
		spec := d.Input.Get(e.key)
		if spec == nil {
			p.add(e.kpos, key, fmt.Sprintf("destiny %s has no input %s%s%s", d.Name, e.key, declaredHint(d.Input), suggest(e.key, d.Input.Names())))
			continue
		}
		p.checkApplyInput(u, file, spec, e.value, key)
		if ct := exprTypes[e.key]; spec.Type != "" && p.wholeExpr(u, e.value) && !fitsCel(inputParamType(spec.Type), ct) {
			p.add(posOf(file, deref(e.value)), key, fmt.Sprintf("input %s of destiny %s is %s %s, but %s is %s%s", spec.Name, d.Name, article(string(spec.Type)), spec.Type, strings.TrimSpace(deref(e.value).Value), expr.TypeName(ct), convertHint(inputParamType(spec.Type), ct)))
		}
	}
	for _, spec := range d.Input {
		if spec.Required && !spec.HasDefault && !hasKey(inEnts, spec.Name) {
			p.add(a.Pos, "apply.input."+spec.Name, fmt.Sprintf("destiny %s needs input %s (%s, required): add it under apply.input", d.Name, spec.Name, spec.Type))
		}
	}
	return a
}

// checkApplyInput type-checks one literal apply.input value.
func (p *parser) checkApplyInput(u *unit, file string, spec *InputSpec, n *yaml.Node, key string) {
	if spec.Type == "" || p.wholeExpr(u, n) {
		return
	}
	n = deref(n)
	pos := posOf(file, n)
	hasExpr := false
	p.walkStrings(file, n, "", func(_ Pos, _, s string) { hasExpr = hasExpr || expr.HasInterpolation(s) })
	if !hasExpr {
		if _, err := CoerceInput(spec.Type, p.value(file, n)); err != nil {
			p.add(pos, key, fmt.Sprintf("input %s of destiny: %v", spec.Name, err))
		}
		return
	}
	// Only the container kind of a value holding ${ } is known statically.
	var ok bool
	switch spec.Type {
	case InputString:
		ok = n.Kind == yaml.ScalarNode
	case InputList:
		ok = n.Kind == yaml.SequenceNode
	case InputMap:
		ok = n.Kind == yaml.MappingNode
	}
	if !ok {
		p.add(pos, key, fmt.Sprintf("input %s of destiny is %s %s, but this value is %s: text around ${ } always makes a string", spec.Name, article(string(spec.Type)), spec.Type, kindName(n)))
	}
}

// convertHint names the CEL conversion that fixes a ${ } of the wrong type.
func convertHint(t module.ParamType, ct *cel.Type) string {
	switch t {
	case module.TypeInt:
		if ct.Kind() == types.StringKind {
			return ": convert it with int(…), or declare the input as an integer"
		}
	case module.TypeNumber:
		if ct.Kind() == types.StringKind {
			return ": convert it with double(…) or int(…)"
		}
	case module.TypeString:
		return ": convert it with string(…)"
	}
	return ""
}

// shellLine warns about ${ input.* } and ${ essence.* } put unquoted into a
// command line run by /bin/sh (SPEC §7 decision, audit L7): a value holding
// ; or $( ) would run as shell code.
func (p *parser) shellLine(u *unit, file, name, key string, n *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || !expr.HasInterpolation(n.Value) {
		return
	}
	t, err := u.env.ParseTemplate(n.Value)
	if err != nil {
		return
	}
	for _, e := range t.Exprs() {
		src := e.Program.Source
		if strings.HasPrefix(src, "shquote(") && strings.HasSuffix(src, ")") {
			continue
		}
		var root string
		for _, r := range e.Program.Refs.Roots {
			if r == "input" || r == "essence" {
				root = r
				break
			}
		}
		if root == "" {
			continue
		}
		fix := fmt.Sprintf("write ${ shquote(%s) }", src)
		if name == "core.exec.run" {
			fix += ", or run the program with cmd: and args: (no shell)"
		}
		p.warn(exprPos(file, n, e.Offset, 1), key, fmt.Sprintf("%s: ${ %s } is put unquoted into a /bin/sh command line: %s value holding ; or $( ) would run as shell code; %s", key, src, article(root)+" "+root, fix))
	}
}

// templateParams checks the params of a template module: the template
// exists; the Jinja-only settings are not given to a Go template; a
// literal Jinja template parses (its syntax errors name the template's
// file:line next to the task's).
func (p *parser) templateParams(u *unit, file string, ents []entry) {
	var tmpl, engine *yaml.Node
	for _, e := range ents {
		switch e.key {
		case "template":
			tmpl = e.value
			p.templateFile(u, file, e.value)
		case "engine":
			engine = e.value
		}
	}
	path, ok := literalString(tmpl)
	if !ok {
		return
	}
	kind, known := literalString(engine)
	if engine != nil && (!known || kind != "jinja" && kind != "go") {
		return
	}
	if !jinja.Selected(path, kind) {
		for _, e := range ents {
			if slices.Contains(jinja.OnlyParams(), e.key) {
				p.add(posOf(file, deref(e.value)), "params."+e.key, fmt.Sprintf("%s is a Jinja setting, but template %s renders with the Go engine: drop %s, or set engine: jinja", e.key, path, e.key))
			}
		}
		return
	}
	clean := strings.TrimPrefix(path, "./")
	if _, ok := u.files[clean]; !ok {
		return
	}
	files := make(fstest.MapFS, len(u.files))
	for f, data := range u.files {
		files[f] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	if err := jinja.Check(files, clean); err != nil {
		p.add(posOf(file, deref(tmpl)), "params.template", fmt.Sprintf("template %s/%v", u.dir, err))
	}
}

// literalString is the value of a plain string node without ${ }.
func literalString(n *yaml.Node) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" || expr.HasInterpolation(n.Value) {
		return "", false
	}
	return n.Value, true
}
