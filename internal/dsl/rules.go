package dsl

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/expr"
)

// Event kinds a rule may react to (SPEC §17, docs/rules.md).
const (
	EventHealthChanged    = "health.changed"
	EventDriftFound       = "drift.found"
	EventRunEnded         = "run.ended"
	EventSoulConnected    = "soul.connected"
	EventSoulDisconnected = "soul.disconnected"
	EventScheduleMissed   = "schedule.missed"
)

// Actions a rule may take.
const (
	ActionRun       = "run"
	ActionProcedure = "procedure"
	ActionNotify    = "notify"
)

// Bounds of a rule's guardrails.
const (
	MaxRulePerHour    = 10000
	MaxRuleConcurrent = 1000
)

// ruleKeys are the keys of a rule file.
var ruleKeys = []string{"name", "description", "on", "if", "do", "cooldown", "max_per_hour", "max_concurrent", "dedup", "resolve_if", "dry_run"}

// EventField is one field of an event kind, for validation and docs.
type EventField struct {
	Name string
	Type *cel.Type
	Doc  string
}

var (
	celStr   = cel.StringType
	strList  = cel.ListType(cel.StringType)
	common   = []EventField{{"kind", celStr, "the event kind"}, {"time", celStr, "when it happened (RFC 3339, UTC)"}}
	eventDef = map[string][]EventField{
		EventHealthChanged: {
			{"incarnation", celStr, "incarnation of the check"}, {"service", celStr, "its service"},
			{"check", celStr, "the health check's name"}, {"sid", celStr, "the host"},
			{"from", celStr, "status before the change (OK, WARNING, CRITICAL, UNKNOWN)"}, {"to", celStr, "status now"},
			{"streak", cel.IntType, "consecutive results with status to (1 on the change; souls report up to 3)"},
			{"duration_s", cel.IntType, "seconds the check had spent in from"},
			{"message", celStr, "first line of the check's output"},
		},
		EventDriftFound: {
			{"incarnation", celStr, "drifted incarnation"}, {"service", celStr, "its service"},
			{"scenario", celStr, "scenario run in check mode"}, {"apply_id", celStr, "the drift run"},
			{"hosts", strList, "hosts that drifted"}, {"tasks", cel.IntType, "tasks that would change"},
		},
		EventRunEnded: {
			{"incarnation", celStr, "incarnation of the run"}, {"service", celStr, "its service"},
			{"scenario", celStr, "scenario"}, {"apply_id", celStr, "the run"},
			{"status", celStr, "succeeded, failed, cancelled, aborted"}, {"error", celStr, "why it failed"},
			{"check_mode", cel.BoolType, "a check (or drift) run"},
			{"rule", celStr, "the rule that started the run (\"\" when none)"},
		},
		EventSoulConnected: {
			{"sid", celStr, "the soul"}, {"covens", strList, "its covens"},
		},
		EventSoulDisconnected: {
			{"sid", celStr, "the soul"}, {"covens", strList, "its covens"},
		},
		EventScheduleMissed: {
			{"schedule_id", celStr, "the schedule"}, {"procedure", celStr, "its procedure"},
			{"tick", celStr, "the tick that was missed (RFC 3339)"},
		},
	}
	// defaultDedup is the incident key of each kind when dedup: is omitted.
	defaultDedup = map[string]string{
		EventHealthChanged:    "${ event.incarnation }/${ event.check }/${ event.sid }",
		EventDriftFound:       "${ event.incarnation }",
		EventRunEnded:         "${ event.apply_id }",
		EventSoulConnected:    "${ event.sid }",
		EventSoulDisconnected: "${ event.sid }",
		EventScheduleMissed:   "${ event.schedule_id }",
	}
	// defaultResolve closes an incident when resolve_if: is omitted.
	defaultResolve = map[string]string{
		EventHealthChanged: `event.to == "OK"`,
	}
)

// EventKinds lists the event kinds, sorted.
func EventKinds() []string {
	out := make([]string, 0, len(eventDef))
	for k := range eventDef {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// EventFields lists the fields of kind (common ones first).
func EventFields(kind string) []EventField {
	return append(slices.Clone(common), eventDef[kind]...)
}

var (
	ruleEnvMu sync.Mutex
	ruleEnvs  = map[string]*expr.ShapedEnv{}
)

// RuleEnv is the expression environment of rules on kind: one root,
// event, whose shape is the kind's fields (closed: a field another kind
// has is an error here).
func RuleEnv(kind string) (*expr.ShapedEnv, error) {
	ruleEnvMu.Lock()
	defer ruleEnvMu.Unlock()
	if e, ok := ruleEnvs[kind]; ok {
		return e, nil
	}
	if _, ok := eventDef[kind]; !ok {
		return nil, fmt.Errorf("unknown event kind %q", kind)
	}
	fields := map[string]*cel.Type{}
	for _, f := range EventFields(kind) {
		fields[f.Name] = f.Type
	}
	e, err := expr.NewShapedEnv(map[string]*expr.Shape{"event": {Name: "event(" + kind + ")", Fields: fields}})
	if err != nil {
		return nil, err
	}
	ruleEnvs[kind] = e
	return e, nil
}

// Rule is one rules/<name>.yml of a service repository, or a Keeper-wide
// rule given through the API (SPEC §17): on an event kind, if a predicate
// holds, do one action, within its guardrails.
type Rule struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	On          string `json:"on"`
	If          string `json:"if,omitempty"`
	Do          RuleAction
	// Cooldown is the least time between two firings for one incident
	// key; MaxPerHour and MaxConcurrent bound the rule's firings over all
	// keys (a storm stops there).
	Cooldown      time.Duration
	MaxPerHour    int
	MaxConcurrent int
	// Dedup renders the incident key of an event: while an incident of
	// that key is open, further matches are duplicates. ResolveIf closes
	// the incident (CEL over the event; "" = the cooldown closes it).
	Dedup     string
	ResolveIf string
	// DryRun only records what the rule would do.
	DryRun bool
	Pos    Pos
}

// RuleAction is what a rule does when it fires: exactly one kind.
type RuleAction struct {
	Kind string `json:"kind"`
	// run: a scenario of the incarnation (service rules: the event's;
	// Keeper-wide rules: Incarnation, a template), with Input rendered
	// from the event.
	Scenario    string         `json:"scenario,omitempty"`
	Incarnation string         `json:"incarnation,omitempty"`
	Input       map[string]any `json:"input,omitempty"`
	Check       bool           `json:"check,omitempty"`
	// procedure: a Checker procedure with Vars rendered from the event.
	Procedure string         `json:"procedure,omitempty"`
	Vars      map[string]any `json:"vars,omitempty"`
	// notify: endpoints by name, with a subject and message rendered from
	// the event.
	Endpoints []string `json:"endpoints,omitempty"`
	Subject   string   `json:"subject,omitempty"`
	Message   string   `json:"message,omitempty"`
	Pos       Pos      `json:"-"`
}

// rules reads rules/*.yml into svc.Rules; it runs after the scenarios are
// loaded (a run action names one).
func (p *parser) rules(fsys fs.FS, svc *Service) {
	ents, err := fs.ReadDir(fsys, "rules")
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		p.add(Pos{File: "rules"}, "", fmt.Sprintf("cannot read rules/: %v", err))
		return
	}
	for _, e := range ents {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yml" && ext != ".yaml") {
			continue
		}
		file := "rules/" + e.Name()
		name := strings.TrimSuffix(e.Name(), ext)
		if !unitNameRE.MatchString(name) {
			p.add(Pos{File: file}, "", fmt.Sprintf("rule name %q must start with a letter or digit and hold only letters, digits, _ . -", name))
			continue
		}
		if _, dup := svc.Rules[name]; dup {
			p.add(Pos{File: file}, "", fmt.Sprintf("rule %s is defined twice (.yml and .yaml): keep one", name))
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > maxFileSize {
			p.skip(file, fmt.Sprintf("file is larger than %d bytes", maxFileSize))
			continue
		}
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			p.add(Pos{File: file}, "", fmt.Sprintf("cannot read: %v", err))
			continue
		}
		if r := p.rule(svc, name, file, data); r != nil {
			svc.Rules[name] = r
		}
	}
}

// ParseRule parses a Keeper-wide rule (SPEC §17) given through the API:
// its problems name the rule as rules/<name>.yml with line and column.
// A Keeper-wide rule's run action must name its incarnation.
func ParseRule(name string, data []byte) (*Rule, error) {
	if !unitNameRE.MatchString(name) {
		return nil, Problems{{Pos: Pos{File: "rules"}, Key: "name", Message: fmt.Sprintf("rule name %q must start with a letter or digit and hold only letters, digits, _ . -", name)}}.Err()
	}
	p := &parser{}
	r := p.rule(nil, name, "rules/"+name+".yml", data)
	if err := sortProblems(p.problems).Err(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, Problems{{Pos: Pos{File: "rules/" + name + ".yml", Line: 1, Col: 1}, Message: "the rule is empty: give it on:, do: and its guardrails"}}.Err()
	}
	return r, nil
}

// rule parses one rule; svc is nil for a Keeper-wide rule.
func (p *parser) rule(svc *Service, name, file string, data []byte) *Rule {
	root, ok := p.parseYAML(file, data)
	if !ok || root == nil {
		if ok {
			p.add(Pos{File: file, Line: 1, Col: 1}, "", "the rule is empty: give it on:, do: and its guardrails")
		}
		return nil
	}
	ents, ok := p.mapping(file, root, "a rule")
	if !ok {
		return nil
	}
	r := &Rule{Name: name, Pos: Pos{File: file, Line: 1, Col: 1}}
	v := map[string]*yaml.Node{}
	kpos := map[string]Pos{}
	for _, e := range ents {
		if !slices.Contains(ruleKeys, e.key) {
			p.unknownKey(e, ruleKeys, "rule "+name)
			continue
		}
		v[e.key], kpos[e.key] = e.value, e.kpos
	}
	if n, ok := v["name"]; ok {
		if s, ok := p.str(file, n, "name"); ok && s != name {
			p.add(posOf(file, deref(n)), "name", fmt.Sprintf("name: %s differs from the file name %s: a rule is named after its file; drop name:", s, name))
		}
	}
	if n, ok := v["description"]; ok {
		r.Description, _ = p.str(file, n, "description")
	}
	n, ok := v["on"]
	if !ok {
		p.add(r.Pos, "on", fmt.Sprintf("rule %s has no on: give the event kind it reacts to (%s)", name, strings.Join(EventKinds(), ", ")))
		return nil
	}
	kind, ok := p.str(file, n, "on")
	if !ok {
		return nil
	}
	if _, known := eventDef[kind]; !known {
		p.add(posOf(file, deref(n)), "on", fmt.Sprintf("unknown event kind %q%s (kinds: %s)", kind, suggest(kind, EventKinds()), strings.Join(EventKinds(), ", ")))
		return nil
	}
	if svc != nil && (kind == EventScheduleMissed || kind == EventSoulConnected || kind == EventSoulDisconnected) {
		p.add(posOf(file, deref(n)), "on", kind+" concerns the Keeper or the fleet, not one incarnation: give it as a Keeper-wide rule (soulctl rules put)")
	}
	r.On = kind
	env, err := RuleEnv(kind)
	if err != nil {
		p.add(posOf(file, deref(n)), "on", err.Error())
		return nil
	}
	if n, ok := v["if"]; ok {
		r.If = p.rulePredicate(env, file, n, "if")
	}
	if n, ok := v["resolve_if"]; ok {
		r.ResolveIf = p.rulePredicate(env, file, n, "resolve_if")
	} else {
		r.ResolveIf = defaultResolve[kind]
	}
	r.Dedup = defaultDedup[kind]
	if n, ok := v["dedup"]; ok {
		if s, ok := p.str(file, n, "dedup"); ok {
			if _, err := env.ParseTemplate(s); err != nil {
				p.add(posOf(file, deref(n)), "dedup", "dedup: "+err.Error())
			} else {
				r.Dedup = s
			}
		}
	}
	missing := func(key, what string) {
		p.add(r.Pos, key, fmt.Sprintf("rule %s has no %s: every rule states %s (guardrails are required and visible)", name, key, what))
	}
	if n, ok := v["cooldown"]; ok {
		r.Cooldown = p.duration(file, n, "cooldown", true)
	} else {
		missing("cooldown", "its cooldown, such as cooldown: 10m (0s for none)")
	}
	if n, ok := v["max_per_hour"]; ok {
		r.MaxPerHour = p.ruleInt(file, n, "max_per_hour", MaxRulePerHour)
	} else {
		missing("max_per_hour", "how many times it may fire in an hour, such as max_per_hour: 10")
	}
	if n, ok := v["max_concurrent"]; ok {
		r.MaxConcurrent = p.ruleInt(file, n, "max_concurrent", MaxRuleConcurrent)
	} else {
		missing("max_concurrent", "how many of its firings may run at once, such as max_concurrent: 1")
	}
	if n, ok := v["dry_run"]; ok {
		r.DryRun, _ = p.boolean(file, n, "dry_run")
	}
	if n, ok := v["do"]; ok {
		r.Do = p.ruleAction(svc, env, file, n)
	} else {
		p.add(r.Pos, "do", fmt.Sprintf("rule %s has no do: give one action: run (a scenario), procedure (a Checker procedure) or notify", name))
	}
	return r
}

func (p *parser) ruleInt(file string, n *yaml.Node, key string, most int) int {
	n = deref(n)
	i, err := 0, error(nil)
	if n != nil {
		i, err = strconv.Atoi(n.Value)
	}
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil || i < 1 || i > most {
		p.add(posOf(file, n), key, fmt.Sprintf("%s must be an integer from 1 to %d, got %s", key, most, kindName(n)))
		return 0
	}
	return i
}

// rulePredicate compiles a bare CEL predicate over the event.
func (p *parser) rulePredicate(env *expr.ShapedEnv, file string, n *yaml.Node, key string) string {
	s, ok := p.str(file, n, key)
	if !ok {
		return ""
	}
	if strings.Contains(s, "${") {
		p.add(posOf(file, deref(n)), key, fmt.Sprintf("%s: is bare CEL, without ${ }: write %s: %s", key, key, strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "${"), "}"))))
		return ""
	}
	if _, err := env.CompileBool(s); err != nil {
		p.add(posOf(file, deref(n)), key, fmt.Sprintf("%s: %v", key, err))
		return ""
	}
	return s
}

var ruleActionKeys = map[string][]string{
	ActionRun:       {"scenario", "incarnation", "input", "check"},
	ActionProcedure: {"name", "vars"},
	ActionNotify:    {"endpoint", "endpoints", "subject", "message"},
}

// ruleAction parses do: {run|procedure|notify: {…}}.
func (p *parser) ruleAction(svc *Service, env *expr.ShapedEnv, file string, n *yaml.Node) RuleAction {
	a := RuleAction{Pos: posOf(file, deref(n))}
	ents, ok := p.mapping(file, n, "do")
	if !ok {
		return a
	}
	kinds := []string{ActionRun, ActionProcedure, ActionNotify}
	if len(ents) != 1 {
		p.add(a.Pos, "do", fmt.Sprintf("do: takes exactly one action (run, procedure or notify), got %d; write one rule per action", len(ents)))
		if len(ents) == 0 {
			return a
		}
	}
	e := ents[0]
	if !slices.Contains(kinds, e.key) {
		p.unknownKey(e, kinds, "do")
		return a
	}
	a.Kind = e.key
	body, ok := p.mapping(file, e.value, "do."+e.key)
	if !ok {
		return a
	}
	v := map[string]*yaml.Node{}
	for _, b := range body {
		if !slices.Contains(ruleActionKeys[a.Kind], b.key) {
			p.unknownKey(b, ruleActionKeys[a.Kind], "do."+a.Kind)
			continue
		}
		v[b.key] = b.value
	}
	tmpl := func(key string, n *yaml.Node) string {
		s, ok := p.str(file, n, key)
		if ok {
			if _, err := env.ParseTemplate(s); err != nil {
				p.add(posOf(file, deref(n)), key, key+": "+err.Error())
			}
		}
		return s
	}
	values := func(key string, n *yaml.Node) map[string]any {
		m, _ := p.value(file, n).(map[string]any)
		if n != nil && !isNull(n) && m == nil && deref(n).Kind != yaml.MappingNode {
			p.add(posOf(file, deref(n)), key, key+" must be a map")
		}
		p.ruleTemplates(env, file, n, key)
		return m
	}
	switch a.Kind {
	case ActionRun:
		if sn, ok := v["scenario"]; ok {
			a.Scenario, _ = p.str(file, sn, "scenario")
		} else {
			p.add(a.Pos, "scenario", "do.run needs scenario: the scenario to run")
		}
		if in, ok := v["incarnation"]; ok {
			if svc != nil {
				p.add(posOf(file, deref(in)), "incarnation", "a service rule runs on the incarnation of its event: drop incarnation:")
			} else {
				a.Incarnation = tmpl("incarnation", in)
			}
		} else if svc == nil {
			a.Incarnation = "${ event.incarnation }"
			if _, err := env.ParseTemplate(a.Incarnation); err != nil {
				p.add(a.Pos, "incarnation", "a Keeper-wide rule on an event without an incarnation must name one: do.run.incarnation")
			}
		}
		if cn, ok := v["check"]; ok {
			a.Check, _ = p.boolean(file, cn, "check")
		}
		a.Input = values("input", v["input"])
		if svc != nil && a.Scenario != "" {
			p.checkRuleInput(svc, env, file, a, v["scenario"], v["input"])
		}
	case ActionProcedure:
		if pn, ok := v["name"]; ok {
			a.Procedure, _ = p.str(file, pn, "name")
		} else {
			p.add(a.Pos, "name", "do.procedure needs name: the Checker procedure to execute")
		}
		a.Vars = values("vars", v["vars"])
	case ActionNotify:
		if en, ok := v["endpoint"]; ok {
			if s, ok := p.str(file, en, "endpoint"); ok {
				a.Endpoints = []string{s}
			}
		}
		if en, ok := v["endpoints"]; ok {
			items, _ := p.sequence(file, en, "endpoints")
			for _, it := range items {
				if s, ok := p.str(file, it, "endpoints"); ok {
					a.Endpoints = append(a.Endpoints, s)
				}
			}
		}
		if len(a.Endpoints) == 0 {
			p.add(a.Pos, "endpoint", "do.notify needs endpoint: (or endpoints:) naming notification endpoints an admin configured")
		}
		if sn, ok := v["subject"]; ok {
			a.Subject = tmpl("subject", sn)
		}
		if mn, ok := v["message"]; ok {
			a.Message = tmpl("message", mn)
		} else {
			p.add(a.Pos, "message", "do.notify needs message: the text sent (${ event.* } allowed)")
		}
	}
	return a
}

// ruleTemplates checks every ${ } string inside a values map.
func (p *parser) ruleTemplates(env *expr.ShapedEnv, file string, n *yaml.Node, key string) {
	n = deref(n)
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" && expr.HasInterpolation(n.Value) {
			if _, err := env.ParseTemplate(n.Value); err != nil {
				p.add(posOf(file, n), key, key+": "+err.Error())
			}
		}
	case yaml.MappingNode, yaml.SequenceNode:
		for _, c := range n.Content {
			p.ruleTemplates(env, file, c, key)
		}
	}
}

// checkRuleInput checks a service rule's run action against the scenario:
// it exists, every input is declared, and whole ${ } values have a type
// the input accepts.
func (p *parser) checkRuleInput(svc *Service, env *expr.ShapedEnv, file string, a RuleAction, scNode, inNode *yaml.Node) {
	sc := svc.Scenarios[a.Scenario]
	if sc == nil {
		names := make([]string, 0, len(svc.Scenarios))
		for n := range svc.Scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		p.add(posOf(file, deref(scNode)), "scenario", fmt.Sprintf("the service has no scenario %q%s (it has: %s)", a.Scenario, suggest(a.Scenario, names), strings.Join(names, ", ")))
		return
	}
	ents, _ := p.mapping(file, inNode, "input")
	given := map[string]bool{}
	for _, e := range ents {
		given[e.key] = true
		spec := sc.Input.Get(e.key)
		if spec == nil {
			p.add(e.kpos, e.key, fmt.Sprintf("scenario %s has no input %s%s", a.Scenario, e.key, suggest(e.key, sc.Input.Names())))
			continue
		}
		vn := deref(e.value)
		if vn == nil || vn.Kind != yaml.ScalarNode || vn.Tag != "!!str" || !expr.HasInterpolation(vn.Value) {
			continue
		}
		t, err := env.ParseTemplate(vn.Value)
		if err != nil {
			continue // reported by ruleTemplates
		}
		if !ruleTypeFits(t.Type(), spec.Type) {
			p.add(posOf(file, vn), e.key, fmt.Sprintf("input %s of scenario %s is %s, but %q yields %s", e.key, a.Scenario, spec.Type, vn.Value, t.Type()))
		}
	}
	for _, spec := range sc.Input {
		if spec.Required && !spec.HasDefault && !given[spec.Name] {
			p.add(posOf(file, deref(inNode)), "input", fmt.Sprintf("scenario %s requires input %s: give it under do.run.input", a.Scenario, spec.Name))
		}
	}
}

func ruleTypeFits(got string, want InputType) bool {
	if got == "dyn" {
		return true
	}
	switch want {
	case InputString:
		return got == "string"
	case InputInteger:
		return got == "int"
	case InputNumber:
		return got == "int" || got == "double"
	case InputBoolean:
		return got == "bool"
	case InputList:
		return strings.HasPrefix(got, "list")
	case InputMap:
		return strings.HasPrefix(got, "map")
	}
	return true
}
