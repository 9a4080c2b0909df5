package rules

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// ruleState is the guardrail memory of one rule.
type ruleState struct {
	mu        sync.Mutex
	incidents map[string]time.Time // open incident key → opened at
	lastFired map[string]time.Time // incident key → last firing
	hour      []time.Time          // firings of the last hour
	active    int                  // firings whose action still runs
}

func newRuleState() *ruleState {
	return &ruleState{incidents: map[string]time.Time{}, lastFired: map[string]time.Time{}}
}

func (s *ruleState) release() {
	s.mu.Lock()
	if s.active > 0 {
		s.active--
	}
	s.mu.Unlock()
}

// candidate is a rule an event is checked against.
type candidate struct {
	id          string
	rule        *dsl.Rule
	owner       string
	incarnation string // the run action's incarnation for service rules
}

// pendingAction is a fired decision whose action starts after the batch's
// decisions are recorded.
type pendingAction struct {
	idx   int
	cand  candidate
	event map[string]any
	state *ruleState
}

// Process decides on a batch of events: it records every decision in one
// transaction, then starts the fired actions.
func (e *Engine) Process(ctx context.Context, batch []Event) {
	var firings []store.Firing
	var actions []pendingAction
	for _, ev := range batch {
		if ev.Kind == kindInvalidate {
			if ev.Incarnation == "" {
				e.keeper, e.paused = nil, nil
			} else {
				delete(e.services, ev.Incarnation)
			}
			continue
		}
		e.count(func(s *Stats) { s.Events++ })
		fields := eventFields(ev)
		for _, c := range e.candidates(ctx, ev) {
			f, fire := e.decide(ctx, c, ev, fields)
			if f == nil {
				continue
			}
			firings = append(firings, *f)
			if fire {
				actions = append(actions, pendingAction{idx: len(firings) - 1, cand: c, event: fields, state: e.stateOf(c.id)})
			}
		}
	}
	if len(firings) == 0 {
		return
	}
	ids, err := e.cfg.Store.AddFirings(context.WithoutCancel(ctx), firings)
	if err != nil {
		// The decisions stand (the guardrails counted them); only their
		// record is lost, which the log says.
		e.log.Error("recording rule decisions", "count", len(firings), "err", err)
	}
	for _, a := range actions {
		var id int64
		if a.idx < len(ids) {
			id = ids[a.idx]
		}
		e.start(ctx, a, id)
	}
}

func (e *Engine) count(f func(*Stats)) {
	e.statsMu.Lock()
	f(&e.stats)
	e.statsMu.Unlock()
}

func eventFields(ev Event) map[string]any {
	m := make(map[string]any, len(ev.Fields)+3)
	maps.Copy(m, ev.Fields)
	m["kind"] = ev.Kind
	m["time"] = ev.Time.UTC().Format(time.RFC3339)
	if _, ok := m["incarnation"]; !ok {
		m["incarnation"] = ev.Incarnation
	}
	return m
}

func (e *Engine) stateOf(id string) *ruleState {
	s := e.state[id]
	if s == nil {
		s = newRuleState()
		e.state[id] = s
	}
	return s
}

// candidates are the rules on ev's kind: the Keeper-wide ones and those
// of ev's incarnation's service.
func (e *Engine) candidates(ctx context.Context, ev Event) []candidate {
	e.loadKeeper(ctx)
	var out []candidate
	names := make([]string, 0, len(e.keeper))
	for n := range e.keeper {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kr := e.keeper[n]
		if kr.rule.On == ev.Kind {
			out = append(out, candidate{id: ID("", n), rule: kr.rule, owner: kr.owner})
		}
	}
	if ev.Incarnation == "" || e.cfg.Services == nil {
		return out
	}
	se, ok := e.services[ev.Incarnation]
	if !ok {
		se.service, se.rules, se.owner, se.err = e.cfg.Services(ctx, ev.Incarnation)
		if se.err != nil {
			e.log.Warn("loading the rules of an incarnation", "incarnation", ev.Incarnation, "err", se.err)
		}
		e.services[ev.Incarnation] = se
	}
	names = names[:0]
	for n := range se.rules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := se.rules[n]
		if r.On == ev.Kind {
			out = append(out, candidate{id: ID(ev.Incarnation, n), rule: r, owner: se.owner, incarnation: ev.Incarnation})
		}
	}
	return out
}

// loadKeeper (re)reads the Keeper-wide rules and the pauses after an
// invalidation.
func (e *Engine) loadKeeper(ctx context.Context) {
	if e.keeper != nil {
		return
	}
	e.keeper, e.paused = map[string]keeperRule{}, map[string]bool{}
	krs, err := e.cfg.Store.ListKeeperRules(ctx)
	if err != nil {
		e.log.Warn("loading Keeper-wide rules", "err", err)
	}
	for _, kr := range krs {
		r, err := dsl.ParseRule(kr.Name, []byte(kr.Source))
		if err != nil {
			e.log.Warn("a stored Keeper-wide rule no longer validates; it is skipped", "rule", kr.Name, "err", err)
			continue
		}
		e.keeper[kr.Name] = keeperRule{rule: r, owner: kr.Owner}
	}
	ps, err := e.cfg.Store.ListRulePauses(ctx)
	if err != nil {
		e.log.Warn("loading paused rules", "err", err)
	}
	for _, p := range ps {
		e.paused[p.Rule] = true
	}
}

// decide applies the guardrails to one rule and one event. It returns nil
// when the event neither matches nor resolves anything; fire reports that
// the action is to start.
func (e *Engine) decide(ctx context.Context, c candidate, ev Event, fields map[string]any) (f *store.Firing, fire bool) {
	env, err := dsl.RuleEnv(c.rule.On)
	if err != nil {
		return nil, false
	}
	vars := map[string]any{"event": fields}
	now := ev.Time
	key := ""
	if c.rule.Dedup != "" {
		if t, err := env.ParseTemplate(c.rule.Dedup); err == nil {
			if v, err := t.Render(ctx, vars); err == nil {
				key = expr.Stringify(v)
			}
		}
	}
	rec := func(decision, reason string) *store.Firing {
		return &store.Firing{Rule: c.id, Incarnation: ev.Incarnation, EventKind: ev.Kind, Event: fields, IncidentKey: key,
			Decision: decision, Reason: reason, Action: c.rule.Do.Kind, Owner: c.owner, At: now}
	}
	st := e.stateOf(c.id)
	st.mu.Lock()
	defer st.mu.Unlock()
	opened, open := st.incidents[key]
	if open && c.rule.ResolveIf == "" && now.Sub(opened) >= c.rule.Cooldown {
		delete(st.incidents, key)
		open = false
	}
	if open && c.rule.ResolveIf != "" {
		if ok, err := e.eval(ctx, env, c.rule.ResolveIf, vars); err == nil && ok {
			delete(st.incidents, key)
			e.count(func(s *Stats) { s.Resolved++ })
			return rec(store.FiringResolved, fmt.Sprintf("incident open since %s closed", opened.UTC().Format(time.RFC3339))), false
		}
	}
	if c.rule.If != "" {
		ok, err := e.eval(ctx, env, c.rule.If, vars)
		if err != nil {
			e.count(func(s *Stats) { s.Failed++ })
			f := rec(store.FiringFailed, "if: could not be evaluated")
			f.Error = err.Error()
			return f, false
		}
		if !ok {
			return nil, false
		}
	}
	suppress := func(reason string) (*store.Firing, bool) {
		e.count(func(s *Stats) { s.Suppressed++ })
		return rec(store.FiringSuppressed, reason), false
	}
	if e.paused[c.id] || e.paused["*"] {
		return suppress(store.SuppressedPaused)
	}
	if open {
		return suppress(store.SuppressedDuplicate)
	}
	if last, ok := st.lastFired[key]; ok && now.Sub(last) < c.rule.Cooldown {
		return suppress(store.SuppressedCooldown)
	}
	hour := st.hour[:0]
	for _, t := range st.hour {
		if now.Sub(t) < time.Hour {
			hour = append(hour, t)
		}
	}
	st.hour = hour
	if len(st.hour) >= c.rule.MaxPerHour {
		return suppress(store.SuppressedPerHour)
	}
	if st.active >= c.rule.MaxConcurrent {
		return suppress(store.SuppressedConcurrent)
	}
	if e.cfg.Owner != nil {
		if err := e.cfg.Owner(ctx, c.owner); err != nil {
			f, _ := suppress(store.SuppressedOwner)
			f.Error = err.Error()
			return f, false
		}
	}
	// It fires (or would): the incident opens, the guardrails count it.
	st.incidents[key] = now
	st.lastFired[key] = now
	st.hour = append(st.hour, now)
	if c.rule.DryRun {
		e.count(func(s *Stats) { s.DryRun++ })
		f := rec(store.FiringDryRun, "")
		f.Reason = e.describe(ctx, c, vars)
		return f, false
	}
	st.active++
	e.count(func(s *Stats) { s.Fired++ })
	return rec(store.FiringFired, ""), true
}

func (e *Engine) eval(ctx context.Context, env *expr.ShapedEnv, src string, vars map[string]any) (bool, error) {
	p, err := env.CompileBool(src)
	if err != nil {
		return false, err
	}
	return p.EvalBool(ctx, vars)
}

// describe says what a dry-run rule would have done.
func (e *Engine) describe(ctx context.Context, c candidate, vars map[string]any) string {
	a := c.rule.Do
	switch a.Kind {
	case dsl.ActionRun:
		inc, input, err := e.runArgs(ctx, c, vars)
		if err != nil {
			return "would run " + a.Scenario + ": " + err.Error()
		}
		return fmt.Sprintf("would run scenario %s on %s with input %v", a.Scenario, inc, input)
	case dsl.ActionProcedure:
		vs, err := render(ctx, c.rule.On, a.Vars, vars)
		if err != nil {
			return "would execute " + a.Procedure + ": " + err.Error()
		}
		return fmt.Sprintf("would execute procedure %s with vars %v", a.Procedure, vs)
	default:
		return fmt.Sprintf("would notify %v", a.Endpoints)
	}
}
