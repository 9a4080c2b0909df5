package checker

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ParseProcedure parses and validates a procedure's YAML. It is fail-closed: unknown
// keys, ops, handlers, error types and var types, JMESPath that does not
// compile, templates naming undeclared vars, and parse targets that are not
// declared (or not arrays, for push) are all refused, each with its line and
// column. The error is a *ValidationError.
func ParseProcedure(name string, src []byte) (*Procedure, error) {
	p := &parser{name: name, vars: map[string]*Var{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, &ValidationError{Name: name, Issues: []Issue{syntaxIssue(src, err)}}
	}
	if len(doc.Content) == 0 {
		return nil, &ValidationError{Name: name, Issues: []Issue{{Line: 1, Col: 1, Msg: "empty procedure: expected config:, vars: and steps:"}}}
	}
	proc := &Procedure{Name: name, Source: string(src)}
	top := p.fields(doc.Content[0], "the procedure", procedureKeys...)
	if n := top["config"]; n != nil {
		proc.Config = p.config(n)
	}
	if n := top["vars"]; n != nil {
		proc.Vars = p.varDecls(n)
	}
	if n := top["steps"]; n != nil {
		proc.Steps = p.steps(n)
	} else if doc.Content[0].Kind == yaml.MappingNode {
		p.errf(doc.Content[0], "the procedure has no steps:")
	}
	if len(p.issues) > 0 {
		sort.SliceStable(p.issues, func(i, j int) bool {
			a, b := p.issues[i], p.issues[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, &ValidationError{Name: name, Issues: p.issues}
	}
	proc.Secrets = p.secrets
	return proc, nil
}

type parser struct {
	name   string
	issues []Issue
	vars   map[string]*Var
	// secrets are the store secrets the templates read ({{ secret("…") }}).
	secrets []string
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.issues = append(p.issues, Issue{Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)})
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

type pair struct {
	key    string
	kn, vn *yaml.Node
}

// pairs returns the entries of a mapping in YAML order, refusing duplicates.
func (p *parser) pairs(n *yaml.Node, what string) []pair {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s must be a mapping", what)
		return nil
	}
	var out []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if seen[k.Value] {
			p.errf(k, "duplicate key %q in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		out = append(out, pair{key: k.Value, kn: k, vn: v})
	}
	return out
}

// fields returns a mapping's values by key, refusing keys not in allowed.
func (p *parser) fields(n *yaml.Node, what string, allowed ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for _, kv := range p.pairs(n, what) {
		if !slices.Contains(allowed, kv.key) {
			p.errf(kv.kn, "unknown key %q in %s (allowed: %s)", kv.key, what, strings.Join(allowed, ", "))
			continue
		}
		out[kv.key] = kv.vn
	}
	return out
}

func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errf(n, "%s must be a string", what)
		return "", false
	}
	return n.Value, true
}

func (p *parser) boolean(n *yaml.Node, what string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		p.errf(n, "%s must be true or false", what)
	}
	return b
}

func (p *parser) integer(n *yaml.Node, what string, min int) int {
	i, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil || i < min {
		p.errf(n, "%s must be an integer >= %d", what, min)
		return min
	}
	return i
}

// seconds reads a non-negative number of seconds.
func (p *parser) seconds(n *yaml.Node, what string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || err != nil || f < 0 || f > 1e9 {
		p.errf(n, "%s must be a number of seconds >= 0", what)
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func (p *parser) config(n *yaml.Node) ProcedureConfig {
	var c ProcedureConfig
	f := p.fields(n, "config", configKeys...)
	if v := f["run-on-vip"]; v != nil {
		c.RunOnVIP = p.boolean(v, "config.run-on-vip")
	}
	if v := f["timeout"]; v != nil {
		d, ok := p.seconds(v, "config.timeout")
		c.Timeout = d
		if ok && d == 0 {
			p.errf(v, "config.timeout must be > 0 seconds (omit it for no timeout)")
		}
	}
	return c
}

var declNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

var varTypes = []string{string(TypeString), string(TypeNumber), string(TypeBoolean), string(TypeArrayString), string(TypeArrayNumber), string(TypeObject)}

func (p *parser) varDecls(n *yaml.Node) []*Var {
	var out []*Var
	for _, kv := range p.pairs(n, "vars") {
		if !declNameRE.MatchString(kv.key) {
			p.errf(kv.kn, "invalid var name %q (letters, digits, _ and -; @ names are built in)", kv.key)
			continue
		}
		v := &Var{Name: kv.key, Line: kv.kn.Line}
		f := p.fields(kv.vn, "var "+kv.key, varKeys...)
		if t := f["type"]; t == nil {
			p.errf(kv.kn, "var %s: type is required (one of %s)", kv.key, strings.Join(varTypes, ", "))
		} else if s, ok := p.str(t, "var "+kv.key+" type"); ok {
			if !slices.Contains(varTypes, s) {
				p.errf(t, "var %s: unknown type %q (one of %s)", kv.key, s, strings.Join(varTypes, ", "))
			}
			v.Type = VarType(s)
		}
		if vis := f["visibility"]; vis != nil {
			if s, ok := p.str(vis, "visibility"); ok {
				switch s {
				case "public":
					v.Public = true
				case "private":
				default:
					p.errf(vis, "var %s: unknown visibility %q (public or private)", kv.key, s)
				}
			}
		}
		if sec := f["secret"]; sec != nil {
			v.Secret = p.boolean(sec, "var "+kv.key+" secret")
			if v.Secret && v.Type == TypeBoolean {
				p.errf(sec, "var %s: a boolean var cannot be secret (masking every true and false would shred the log)", kv.key)
			}
		}
		if ds := f["default_secret"]; ds != nil {
			if name, ok := p.str(ds, "var "+kv.key+" default_secret"); ok {
				v.DefaultSecret = name
				if !v.Secret {
					p.errf(ds, "var %s: default_secret is for secret: true vars", kv.key)
				}
				if v.Type != "" && v.Type != TypeString {
					p.errf(ds, "var %s: default_secret gives a string, but the var is %s", kv.key, v.Type)
				}
			}
		}
		if d := f["default"]; d != nil && v.Secret {
			p.errf(d, "var %s: a secret var's default would be readable by every viewer in the procedure source (audit L10): keep the value in the Keeper's secret store (soulctl secret set NAME) and write default_secret: NAME", kv.key)
		} else if d != nil {
			val, err := decodeValue(d)
			switch {
			case err != nil:
				p.errf(d, "var %s: default: %v", kv.key, err)
			case v.Type != "" && !checkType(v.Type, val):
				p.errf(d, "var %s: default %s is not of type %s", kv.key, toJSON(val), v.Type)
			default:
				v.Default, v.HasDefault = val, true
			}
		}
		p.vars[v.Name] = v
		out = append(out, v)
	}
	return out
}

func (p *parser) steps(n *yaml.Node) []*Step {
	var out []*Step
	for _, kv := range p.pairs(n, "steps") {
		s := &Step{Name: kv.key, Line: kv.kn.Line}
		what := "step " + kv.key
		f := p.fields(kv.vn, what, stepKeys...)
		if c := f["conditions"]; c != nil {
			if c.Kind != yaml.SequenceNode || len(c.Content) == 0 {
				p.errf(c, "%s: conditions must be a non-empty list", what)
			} else {
				for i, cn := range c.Content {
					s.Conditions = append(s.Conditions, p.condition(resolve(cn), fmt.Sprintf("%s condition %d", what, i+1)))
				}
			}
		}
		if a := f["action"]; a != nil {
			s.Action = p.action(a, what+" action")
		}
		if f["conditions"] == nil && f["action"] == nil && kv.vn.Kind == yaml.MappingNode {
			p.errf(kv.kn, "%s has neither conditions nor action", what)
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) condition(n *yaml.Node, what string) *Condition {
	c := &Condition{Line: n.Line, Attempts: Attempts{Min: 1, Max: 1}}
	f := p.fields(n, what, conditionKeys...)
	switch {
	case f["apicall"] != nil && f["const"] != nil:
		p.errf(n, "%s: apicall and const are exclusive", what)
	case f["apicall"] != nil:
		c.Calls = p.calls(f["apicall"], what)
	case f["const"] != nil:
		c.Const = p.value(f["const"], what+" const")
	case n.Kind == yaml.MappingNode:
		p.errf(n, "%s needs apicall or const", what)
	}
	if e := f["expect"]; e == nil {
		if n.Kind == yaml.MappingNode {
			p.errf(n, "%s needs expect: (a list of {filter, op, value})", what)
		}
	} else if e.Kind != yaml.SequenceNode || len(e.Content) == 0 {
		p.errf(e, "%s: expect must be a non-empty list", what)
	} else {
		for _, en := range e.Content {
			c.Expect = append(c.Expect, p.expect(resolve(en), what+" expect"))
		}
	}
	if a := f["attempts"]; a != nil {
		c.Attempts = p.attempts(a, what+" attempts")
	}
	if oe := f["on-error"]; oe != nil {
		c.OnError = p.onError(oe, what+" on-error")
	}
	if l := f["log"]; l != nil {
		c.Log = p.logSpec(l, what+" log", false)
	}
	return c
}

func (p *parser) expect(n *yaml.Node, what string) *Expect {
	e := &Expect{Line: n.Line}
	f := p.fields(n, what, expectKeys...)
	if fn := f["filter"]; fn == nil {
		p.errf(n, "%s: filter is required", what)
	} else {
		e.Filter = p.filter(fn, what)
	}
	if on := f["op"]; on == nil {
		p.errf(n, "%s: op is required", what)
	} else if s, ok := p.str(on, what+" op"); ok {
		if !knownOps[Op(s)] {
			p.errf(on, "%s: unknown op %q (one of ==, !=, >, >=, <, <=, in, contains)", what, s)
		}
		e.Op = Op(s)
	}
	if vn := f["value"]; vn == nil {
		p.errf(n, "%s: value is required", what)
	} else {
		e.Value = p.value(vn, what+" value")
	}
	return e
}

// Bounds of attempts (SPEC §10.2 "Abuse bounds", audit finding L3): every
// attempt is a step-log row, so a condition cannot be retried without end
// or in a tight loop by accident.
const (
	// MaxAttempts is the largest attempts.max.
	MaxAttempts = 1000
	// MinInterval is the shortest attempts.interval, and the interval of
	// a condition with several attempts and none written; a procedure
	// polls faster only with attempts.fast-poll: true.
	MinInterval = 100 * time.Millisecond
)

func (p *parser) attempts(n *yaml.Node, what string) Attempts {
	a := Attempts{Min: 1}
	f := p.fields(n, what, attemptsKeys...)
	if v := f["min"]; v != nil {
		a.Min = p.integer(v, what+".min", 1)
	}
	if v := f["max"]; v != nil {
		a.Max = p.integer(v, what+".max", 1)
	} else {
		a.Max = a.Min
	}
	for _, k := range []string{"min", "max"} {
		if v := f[k]; v != nil && p.num(v) > MaxAttempts {
			p.errf(v, "%s.%s is %s: at most %d attempts (each one is a step-log row)", what, k, v.Value, MaxAttempts)
		}
	}
	fast := false
	if v := f["fast-poll"]; v != nil {
		fast = p.boolean(v, what+".fast-poll")
	}
	if a.Max > 1 {
		a.Interval = MinInterval
	}
	if v := f["interval"]; v != nil {
		d, ok := p.seconds(v, what+".interval")
		switch {
		case ok && d < MinInterval && !fast:
			p.errf(v, "%s.interval %s is below %s: write a longer interval, or fast-poll: true in attempts to poll faster on purpose", what, v.Value, MinInterval)
		case ok:
			a.Interval = d
		}
	}
	if a.Min > a.Max {
		p.errf(n, "%s: min (%d) is greater than max (%d)", what, a.Min, a.Max)
	}
	return a
}

// num is the integer value of a node, or 0.
func (p *parser) num(n *yaml.Node) int {
	i, _ := strconv.Atoi(n.Value)
	return i
}

func (p *parser) onError(n *yaml.Node, what string) map[string]string {
	out := map[string]string{}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "%s must be a list of {error-type, handler}", what)
		return out
	}
	for _, hn := range n.Content {
		f := p.fields(hn, what, onErrorKeys...)
		var et, h string
		if v := f["error-type"]; v == nil {
			p.errf(hn, "%s: error-type is required", what)
		} else if s, ok := p.str(v, "error-type"); ok {
			if s != ErrAttemptsLimitReached {
				p.errf(v, "%s: unknown error-type %q (known: %s)", what, s, ErrAttemptsLimitReached)
			}
			et = s
		}
		if v := f["handler"]; v == nil {
			p.errf(hn, "%s: handler is required (%s or %s)", what, HandlerExit, HandlerContinue)
		} else if s, ok := p.str(v, "handler"); ok {
			if s != HandlerExit && s != HandlerContinue {
				p.errf(v, "%s: unknown handler %q (%s or %s)", what, s, HandlerExit, HandlerContinue)
			}
			h = s
		}
		if _, dup := out[et]; dup && et != "" {
			p.errf(hn, "%s: error-type %s handled twice", what, et)
		}
		out[et] = h
	}
	return out
}

func (p *parser) action(n *yaml.Node, what string) *Action {
	a := &Action{}
	f := p.fields(n, what, actionKeys...)
	if c := f["apicall"]; c != nil {
		a.Calls = p.calls(c, what)
	}
	if pn := f["parse"]; pn != nil {
		if a.Calls == nil && f["apicall"] == nil {
			p.errf(pn, "%s: parse needs an apicall to parse", what)
		}
		if pn.Kind != yaml.SequenceNode {
			p.errf(pn, "%s: parse must be a list of {filter, op, var}", what)
		} else {
			for _, e := range pn.Content {
				a.Parse = append(a.Parse, p.parseEntry(resolve(e), what+" parse"))
			}
		}
	}
	if l := f["log"]; l != nil {
		a.Log = p.logSpec(l, what+" log", true)
	}
	if len(f) == 0 && n.Kind == yaml.MappingNode {
		p.errf(n, "%s is empty (expected apicall, parse, log)", what)
	}
	return a
}

func (p *parser) parseEntry(n *yaml.Node, what string) *ParseRule {
	e := &ParseRule{Line: n.Line}
	f := p.fields(n, what, parseKeys...)
	if fn := f["filter"]; fn == nil {
		p.errf(n, "%s: filter is required", what)
	} else {
		e.Filter = p.filter(fn, what)
	}
	if on := f["op"]; on == nil {
		p.errf(n, "%s: op is required (store or push)", what)
	} else if s, ok := p.str(on, what+" op"); ok {
		if s != ParseStore && s != ParsePush {
			p.errf(on, "%s: unknown op %q (store or push)", what, s)
		}
		e.Op = s
	}
	vn := f["var"]
	if vn == nil {
		p.errf(n, "%s: var is required", what)
		return e
	}
	s, ok := p.str(vn, what+" var")
	if !ok {
		return e
	}
	e.Var = s
	switch {
	case s == VarDeps:
		if e.Op == ParseStore {
			p.errf(vn, "%s: %s only takes push", what, VarDeps)
		}
	case s == VarDepsStatus:
		p.errf(vn, "%s: %s is read-only", what, VarDepsStatus)
	case p.vars[s] == nil:
		p.errf(vn, "%s: var %q is not declared in vars:", what, s)
	case e.Op == ParsePush && !p.vars[s].Type.IsArray():
		p.errf(vn, "%s: push needs an array var; %s is %s", what, s, p.vars[s].Type)
	}
	return e
}

func (p *parser) logSpec(n *yaml.Node, what string, allowString bool) LogSpec {
	var l LogSpec
	if allowString && n.Kind == yaml.ScalarNode {
		l.After = p.template(n, what)
		return l
	}
	f := p.fields(n, what, logKeys...)
	if v := f["before"]; v != nil {
		l.Before = p.template(v, what+".before")
	}
	if v := f["after"]; v != nil {
		l.After = p.template(v, what+".after")
	}
	return l
}
