package dsl

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
	"go.yaml.in/yaml/v3"
)

// covenRE is what a coven name looks like.
var covenRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// registerName parses register:.
func (p *parser) registerName(file string, n *yaml.Node) string {
	s, ok := p.str(file, n, "register")
	if !ok {
		return ""
	}
	pos := posOf(file, deref(n))
	switch {
	case !identRE.MatchString(s):
		p.add(pos, "register", fmt.Sprintf("register name %q must be an identifier (letters, digits, _), so that register.%s can be read", s, s))
		return ""
	case s == "self":
		p.add(pos, "register", "register name self is reserved: register.self is the current task's own result")
		return ""
	}
	return s
}

// on parses on: keeper | [coven, …].
func (p *parser) on(file string, n *yaml.Node) *On {
	n = deref(n)
	pos := posOf(file, n)
	on := &On{Pos: pos}
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		if n.Value == "keeper" {
			on.Keeper = true
			return on
		}
		if msg := onItemProblem(n.Value); msg != "" {
			p.add(pos, "on", msg)
			return nil
		}
		p.add(pos, "on", fmt.Sprintf("on: takes keeper or a list of covens: write on: [%s]", n.Value))
		return nil
	}
	items, ok := p.sequence(file, n, "on")
	if !ok {
		p.add(pos, "on", "on: takes keeper or a list of coven names; omit it to target all members of the incarnation")
		return nil
	}
	if len(items) == 0 {
		p.add(pos, "on", "on: [] targets nothing: omit on: to target all members of the incarnation")
		return nil
	}
	valid := true
	for _, it := range items {
		it = deref(it)
		ipos := posOf(file, it)
		if it == nil || it.Kind != yaml.ScalarNode || it.Tag != "!!str" {
			p.add(ipos, "on", fmt.Sprintf("on: items must be coven names, got %s", kindName(it)))
			valid = false
			continue
		}
		if it.Value == "keeper" {
			p.add(ipos, "on", "on: keeper cannot be combined with covens: write on: keeper alone")
			valid = false
			continue
		}
		if msg := onItemProblem(it.Value); msg != "" {
			p.add(ipos, "on", msg)
			valid = false
			continue
		}
		on.Covens = append(on.Covens, it.Value)
		on.CovenPos = append(on.CovenPos, ipos)
	}
	if !valid {
		return nil
	}
	return on
}

// onItemProblem explains why s is not a coven name ("" when it is one).
func onItemProblem(s string) string {
	switch {
	case strings.Contains(s, "incarnation."):
		return fmt.Sprintf("on: %q: the incarnation is not a coven; omit on: to target all members of the incarnation", s)
	case strings.Contains(s, "${") || strings.Contains(s, "{{"):
		return fmt.Sprintf("on: %q: on: takes literal coven names, never expressions; filter with where: instead", s)
	case !covenRE.MatchString(s):
		return fmt.Sprintf("on: %q is not a coven name (letters, digits, _ . -); on: takes literal coven names, filter with where: instead", s)
	}
	return ""
}

// serial parses serial: N | "P%".
func (p *parser) serial(file string, n *yaml.Node) *Serial {
	n = deref(n)
	pos := posOf(file, n)
	bad := func() *Serial {
		p.add(pos, "serial", fmt.Sprintf("serial: must be a positive integer (hosts per wave) or a percentage \"P%%\" with P in (0,100], got %s", kindName(n)))
		return nil
	}
	if n == nil || n.Kind != yaml.ScalarNode {
		return bad()
	}
	switch n.Tag {
	case "!!int":
		i, err := strconv.Atoi(n.Value)
		if err != nil || i <= 0 {
			return bad()
		}
		return &Serial{Count: i, Pos: pos}
	case "!!str":
		s := strings.TrimSpace(n.Value)
		if pct, ok := strings.CutSuffix(s, "%"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
			if err != nil || !(f > 0 && f <= 100) {
				return bad()
			}
			return &Serial{Percent: f, Pos: pos}
		}
		if i, err := strconv.Atoi(s); err == nil && i > 0 {
			return &Serial{Count: i, Pos: pos}
		}
	}
	return bad()
}

// requisites parses onchanges/onfail/require: a list of register names of
// earlier tasks (a single name is accepted too).
func (p *parser) requisites(u *unit, file string, n *yaml.Node, key string) []string {
	n = deref(n)
	var items []*yaml.Node
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		items = []*yaml.Node{n}
	} else {
		var ok bool
		if items, ok = p.sequence(file, n, key); !ok {
			return nil
		}
	}
	if len(items) == 0 {
		p.add(posOf(file, n), key, fmt.Sprintf("%s: is empty: name the registered tasks it depends on, or drop it", key))
	}
	var out []string
	for _, it := range items {
		name, ok := p.str(file, it, key)
		if !ok {
			continue
		}
		if !u.defined[name] {
			p.add(posOf(file, deref(it)), key, fmt.Sprintf("%s: %s names no register of an earlier task: add register: %s to the task it depends on (before this one)%s", key, name, name, suggest(name, sortedKeys(u.defined))))
			continue
		}
		out = append(out, name)
	}
	return out
}

// loop parses loop: a list, or one ${ } expression yielding a list.
// It returns the loop value and the static type of its elements.
func (p *parser) loop(u *unit, file string, n *yaml.Node) (any, *cel.Type, *expr.Shape) {
	n = deref(n)
	pos := posOf(file, n)
	if n != nil && n.Kind == yaml.SequenceNode {
		if len(n.Content) > DefaultMaxLoopItems {
			p.add(pos, "loop", fmt.Sprintf("loop: %d items, more than the limit of %d per task (runs.max_loop_items): split the work across tasks or loop over a computed list the keeper's limit allows", len(n.Content), DefaultMaxLoopItems))
			return nil, cel.DynType, nil
		}
		p.templates(u, file, n, "loop", templateOpts{})
		v := p.value(file, n)
		t, shape := loopItem(v, nil)
		return v, t, shape
	}
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" && expr.HasInterpolation(n.Value) {
		t, err := u.env.ParseTemplate(n.Value)
		if err != nil {
			p.add(pos, "loop", "loop: "+err.Error())
			return nil, cel.DynType, nil
		}
		if !t.Whole() {
			p.add(pos, "loop", `loop: must be a list or exactly one "${ … }" expression yielding a list, with no text around it`)
			return nil, cel.DynType, nil
		}
		p.checkRefs(u, pos, "loop", t.Refs(), templateOpts{})
		lt := p.templateTypes(u, file, n, "loop", t, templateOpts{})
		if lt != nil && !fitsCel(module.TypeList, lt) && !fitsCel(module.TypeMap, lt) {
			p.add(pos, "loop", fmt.Sprintf("loop: must yield a list (or a map: item is then {key, value}, in key order), but %s is %s", t.Exprs()[0].Program.Source, expr.TypeName(lt)))
		}
		it, shape := loopItem(nil, lt)
		return n.Value, it, shape
	}
	p.add(pos, "loop", fmt.Sprintf(`loop: must be a list or one "${ … }" expression yielding a list, got %s`, kindName(n)))
	return nil, cel.DynType, nil
}

// duration parses a Go duration ("30s", "5m"); zeroOK allows "0s".
func (p *parser) duration(file string, n *yaml.Node, key string, zeroOK bool) time.Duration {
	n = deref(n)
	pos := posOf(file, n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.add(pos, key, fmt.Sprintf("%s: must be a duration such as 30s or 5m (with a unit), got %s", key, kindName(n)))
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		p.add(pos, key, fmt.Sprintf("%s: %q is not a duration: write it like 30s, 5m or 1h30m", key, n.Value))
	case d < 0 || (d == 0 && !zeroOK):
		p.add(pos, key, fmt.Sprintf("%s: must be positive, got %s", key, n.Value))
	}
	return d
}

// retry parses retry: {count, delay, until}.
func (p *parser) retry(u *unit, file string, n *yaml.Node, opts templateOpts) *Retry {
	ents, ok := p.mapping(file, n, "retry")
	if !ok {
		return nil
	}
	r := &Retry{Pos: posOf(file, deref(n))}
	for _, e := range ents {
		switch e.key {
		case "count":
			v := deref(e.value)
			c, err := 0, error(nil)
			if v != nil {
				c, err = strconv.Atoi(v.Value)
			}
			if v == nil || v.Kind != yaml.ScalarNode || v.Tag != "!!int" || err != nil || c < 1 {
				p.add(posOf(file, v), "retry.count", fmt.Sprintf("retry.count must be a positive integer (attempts), got %s", kindName(v)))
				continue
			}
			r.Count = c
		case "delay":
			r.Delay = p.duration(file, e.value, "retry.delay", true)
		case "until":
			r.Until = p.predicate(u, file, e.value, "retry.until", opts)
		default:
			p.unknownKey(e, retryKeys, "retry")
		}
	}
	if !hasKey(ents, "count") {
		p.add(r.Pos, "retry.count", "retry: needs count: (how many attempts at most)")
	}
	return r
}
