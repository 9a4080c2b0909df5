package dsl

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module/custom"
	"go.yaml.in/yaml/v3"
)

var (
	scenarioTopKeys = []string{"description", "input", "state_changes", "tasks", "vars_files"}
	destinyTopKeys  = []string{"description", "input", "tasks", "output", "vars_files"}
	inputSpecKeys   = []string{"type", "default", "required", "description", "secret"}
)

// scenario parses scenario/<name>/ (destinies must be parsed already).
func (p *parser) scenario(svc *Service, name, dir string, files map[string][]byte) *Scenario {
	u := newUnit(expr.KindScenario, name, dir, files, svc)
	u.mods = svc.Modules
	s := &Scenario{Name: name, Dir: dir, Files: files, Pos: Pos{File: u.file("main.yml"), Line: 1, Col: 1}}
	data, ok := files["main.yml"]
	if !ok {
		if p.unread[u.file("main.yml")] {
			return nil
		}
		p.add(Pos{File: dir}, "", fmt.Sprintf("scenario %s has no main.yml: create %s/main.yml with its tasks:", name, dir))
		return nil
	}
	if vdata, ok := files["vars.yml"]; ok {
		s.Vars = p.varsFile(u, vdata)
	}
	file := u.file("main.yml")
	root, ok := p.parseYAML(file, data)
	if !ok {
		return s
	}
	ents, ok := p.mapping(file, root, "scenario main.yml")
	if !ok {
		return s
	}
	var tasksNode, inputNode *yaml.Node
	var stateEntry *entry
	for _, e := range ents {
		switch e.key {
		case "description":
			p.str(file, e.value, "description")
		case "input":
			s.Input = p.inputs(file, e.value)
			inputNode = e.value
			u.types.input = inputShape(s.Input)
		case "state_changes":
			stateEntry = &e
		case "vars_files":
			s.VarsFiles = p.varsFiles(u, file, e.value, "vars_files")
		case "tasks":
			tasksNode = e.value
		default:
			p.unknownKey(e, scenarioTopKeys, "scenario main.yml")
		}
	}
	if tasksNode == nil {
		p.add(s.Pos, "tasks", fmt.Sprintf("scenario %s has no tasks: list", name))
	} else {
		s.Tasks = p.taskList(u, file, tasksNode, "tasks", "")
	}
	// state_changes is evaluated after every task: it sees the vars of
	// vars.yml and vars_files and every register with its type, wherever
	// the key stands in the file.
	if stateEntry != nil {
		s.StateChanges = p.stateChanges(u, file, *stateEntry)
	}
	p.checkDeferred(u)
	p.checkInputs(u, inputNode)
	return s
}

// destiny parses destiny/<name>/ from its files.
func (p *parser) destiny(name, dir string, files map[string][]byte, mods map[string]*custom.Module) *Destiny {
	u := newUnit(expr.KindDestiny, name, dir, files, nil)
	u.mods = mods
	d := &Destiny{Name: name, Dir: dir, Files: files, Pos: Pos{File: u.file("main.yml"), Line: 1, Col: 1}}
	data, ok := files["main.yml"]
	if !ok {
		if p.unread[u.file("main.yml")] {
			return nil
		}
		p.add(Pos{File: dir}, "", fmt.Sprintf("destiny %s has no main.yml: create %s/main.yml with its input:, tasks: and output:", name, dir))
		return nil
	}
	file := u.file("main.yml")
	root, ok := p.parseYAML(file, data)
	if !ok {
		return d
	}
	ents, ok := p.mapping(file, root, "destiny main.yml")
	if !ok {
		return d
	}
	var tasksNode, outputNode, inputNode *yaml.Node
	for _, e := range ents {
		switch e.key {
		case "description":
			p.str(file, e.value, "description")
		case "input":
			d.Input = p.inputs(file, e.value)
			inputNode = e.value
			u.types.input = inputShape(d.Input)
		case "tasks":
			tasksNode = e.value
		case "vars_files":
			d.VarsFiles = p.varsFiles(u, file, e.value, "vars_files")
		case "output":
			outputNode = e.value
		case "state_changes":
			p.add(e.kpos, e.key, "state_changes: is scenario-only: a destiny returns values through output: and the scenario commits state")
		default:
			p.unknownKey(e, destinyTopKeys, "destiny main.yml")
		}
	}
	if tasksNode == nil {
		p.add(d.Pos, "tasks", fmt.Sprintf("destiny %s has no tasks: list", name))
	} else {
		d.Tasks = p.taskList(u, file, tasksNode, "tasks", "")
	}
	if outputNode != nil {
		d.Output = p.output(u, file, outputNode)
	}
	p.checkDeferred(u)
	p.checkInputs(u, inputNode)
	return d
}

func newUnit(kind expr.Kind, name, dir string, files map[string][]byte, svc *Service) *unit {
	return &unit{
		kind: kind, name: name, dir: dir, files: files, svc: svc,
		env:        expr.ForKind(kind),
		defined:    map[string]bool{},
		all:        map[string]bool{},
		registered: map[string]Pos{},
		types: typeState{
			essence: essenceShape(svc),
			vars:    map[string]*cel.Type{},
			regs:    map[string]*expr.Shape{},
		},
	}
}

// varsFile parses a scenario's vars.yml.
func (p *parser) varsFile(u *unit, data []byte) map[string]any {
	file := u.file("vars.yml")
	root, ok := p.parseYAML(file, data)
	if !ok {
		return nil
	}
	return p.varsMap(u, file, root, "vars", true)
}

// varsMap parses a map of vars: identifier keys, values with templates.
// deferred checks register references against every register of the unit
// instead of the earlier ones.
func (p *parser) varsMap(u *unit, file string, n *yaml.Node, key string, deferred bool) map[string]any {
	ents, ok := p.mapping(file, n, key)
	if !ok {
		return nil
	}
	out := make(map[string]any, len(ents))
	// The entries of one vars: map (or vars.yml) are rendered together, so
	// none of them sees another: their types apply after the map.
	types := make(map[string]*cel.Type, len(ents))
	for _, e := range ents {
		if !identRE.MatchString(e.key) {
			p.add(e.kpos, key+"."+e.key, fmt.Sprintf("%s name %q must be an identifier (letters, digits, _), so that vars.%s can be read", key, e.key, e.key))
		}
		whole := p.templates(u, file, e.value, key+"."+e.key, templateOpts{deferred: deferred})
		out[e.key] = p.value(file, e.value)
		types[e.key] = valueType(out[e.key], whole)
	}
	maps.Copy(u.types.vars, types)
	return out
}

// inputs parses an input: block.
func (p *parser) inputs(file string, n *yaml.Node) Inputs {
	ents, ok := p.mapping(file, n, "input")
	if !ok {
		return nil
	}
	var out Inputs
	for _, e := range ents {
		key := "input." + e.key
		if !identRE.MatchString(e.key) {
			p.add(e.kpos, key, fmt.Sprintf("input name %q must be an identifier (letters, digits, _), so that input.%s can be read", e.key, e.key))
		}
		spec := &InputSpec{Name: e.key, Pos: e.kpos}
		if isNull(e.value) {
			p.add(e.kpos, key, fmt.Sprintf("input %s needs at least type: (%s)", e.key, typeList()))
			continue
		}
		fields, ok := p.mapping(file, e.value, "input "+e.key)
		if !ok {
			continue
		}
		var defNode *yaml.Node
		for _, f := range fields {
			switch f.key {
			case "type":
				if s, ok := p.str(file, f.value, key+".type"); ok {
					if !slices.Contains(validInputTypes, InputType(s)) {
						p.add(posOf(file, f.value), key+".type", fmt.Sprintf("input %s: unknown type %s: use one of %s%s", e.key, s, typeList(), suggest(s, typeNames())))
					} else {
						spec.Type = InputType(s)
					}
				}
			case "default":
				defNode = f.value
			case "required":
				spec.Required, _ = p.boolean(file, f.value, key+".required")
			case "secret":
				spec.Secret, _ = p.boolean(file, f.value, key+".secret")
			case "description":
				spec.Description, _ = p.str(file, f.value, key+".description")
			default:
				p.unknownKey(f, inputSpecKeys, "input "+e.key)
			}
		}
		if !hasKey(fields, "type") {
			p.add(e.kpos, key+".type", fmt.Sprintf("input %s has no type: give one of %s", e.key, typeList()))
		}
		if defNode != nil {
			p.inputDefault(file, spec, defNode)
		}
		out = append(out, spec)
	}
	return out
}

func (p *parser) inputDefault(file string, spec *InputSpec, n *yaml.Node) {
	key := "input." + spec.Name + ".default"
	found := false
	p.walkStrings(file, n, "", func(pos Pos, _, s string) {
		if !found && expr.HasInterpolation(s) {
			found = true
			p.add(pos, key, fmt.Sprintf("input %s: a default is a literal value; ${ } is not evaluated here (compute it in the task instead)", spec.Name))
		}
	})
	if found {
		return
	}
	v := p.value(file, n)
	spec.HasDefault = true
	if spec.Type == "" {
		spec.Default = v
		return
	}
	nv, err := CoerceInput(spec.Type, v)
	if err != nil {
		p.add(posOf(file, n), key, fmt.Sprintf("input %s: default %v", spec.Name, err))
		return
	}
	spec.Default = nv
}

func typeNames() []string {
	out := make([]string, len(validInputTypes))
	for i, t := range validInputTypes {
		out[i] = string(t)
	}
	return out
}

func typeList() string { return strings.Join(typeNames(), "|") }

// stateChanges parses state_changes: {sets, unsets}.
func (p *parser) stateChanges(u *unit, file string, e entry) StateChanges {
	sc := StateChanges{Pos: e.kpos}
	ents, ok := p.mapping(file, e.value, "state_changes")
	if !ok {
		return sc
	}
	allowed, closed := stateKeys(u.svc)
	checkKey := func(pos Pos, key, k string) {
		if closed && !slices.Contains(allowed, k) {
			p.add(pos, key, fmt.Sprintf("state key %s is not declared in service.yml state_schema properties (declared: %s)%s", k, strings.Join(allowed, ", "), suggest(k, allowed)))
		}
	}
	for _, f := range ents {
		switch f.key {
		case "sets":
			sets, ok := p.mapping(file, f.value, "state_changes.sets")
			if !ok {
				continue
			}
			sc.Sets = map[string]any{}
			sc.SetPos = map[string]Pos{}
			for _, s := range sets {
				sc.SetPos[s.key] = posOf(file, deref(s.value))
				key := "state_changes.sets." + s.key
				checkKey(s.kpos, key, s.key)
				ct := p.templates(u, file, s.value, key, templateOpts{deferred: true})
				sc.Sets[s.key] = p.value(file, s.value)
				p.checkStateType(u.svc, posOf(file, deref(s.value)), key, s.key, valueType(sc.Sets[s.key], ct))
			}
		case "unsets":
			items, ok := p.sequence(file, f.value, "state_changes.unsets")
			if !ok {
				continue
			}
			for _, it := range items {
				if k, ok := p.str(file, it, "state_changes.unsets"); ok {
					checkKey(posOf(file, it), "state_changes.unsets", k)
					if _, both := sc.Sets[k]; both {
						p.add(posOf(file, it), "state_changes.unsets", fmt.Sprintf("state key %s is both set and unset", k))
					}
					sc.Unsets = append(sc.Unsets, k)
				}
			}
		default:
			p.unknownKey(f, stateChangesKeys, "state_changes")
		}
	}
	return sc
}

// stateKeys returns the declared state properties and whether the schema
// is closed (additionalProperties: false), so unknown keys are errors.
func stateKeys(svc *Service) ([]string, bool) {
	if svc == nil || svc.Manifest.StateSchema == nil {
		return nil, false
	}
	props, _ := svc.Manifest.StateSchema["properties"].(map[string]any)
	closed := svc.Manifest.StateSchema["additionalProperties"] == false
	return sortedKeys(props), closed
}

// output parses a destiny's output: map.
func (p *parser) output(u *unit, file string, n *yaml.Node) map[string]any {
	ents, ok := p.mapping(file, n, "output")
	if !ok {
		return nil
	}
	out := make(map[string]any, len(ents))
	for _, e := range ents {
		p.templates(u, file, e.value, "output."+e.key, templateOpts{deferred: true})
		out[e.key] = p.value(file, e.value)
	}
	return out
}

// checkDeferred checks the register references of state_changes, vars.yml
// and output against every register of the unit.
func (p *parser) checkDeferred(u *unit) {
	for _, d := range u.deferred {
		for _, name := range d.refs.Registers {
			if !u.all[name] {
				p.add(d.pos, d.key, fmt.Sprintf("register.%s is not defined: no task of %s %s has register: %s%s", name, u.kind, u.name, name, suggest(name, sortedKeys(u.all))))
			}
		}
	}
}
