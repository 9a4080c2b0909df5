package expr

import (
	"maps"
	"sort"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"

	"github.com/soulstack/soulstack/internal/domain"
)

// Activation is the data one evaluation sees. The engine (scenario tasks)
// and the task executor (destiny tasks on a soul) fill it per host; fields
// left nil read as empty maps. An Activation is read-only during
// evaluation, so one value may be shared by concurrent evaluations as long
// as nobody mutates it meanwhile (Registers is itself synchronized).
type Activation struct {
	// Order is the YAML key order of the service's maps (KeyOrder): maps
	// read from input, essence, vars, item and state iterate in it. nil
	// iterates every map in key order.
	Order   *KeyOrder
	Input   map[string]any
	Essence map[string]any
	// Vars are scenario vars.yml merged with the task's vars: (task wins).
	Vars map[string]any
	// Item and LoopIndex are set inside a loop: (HasItem true).
	Item      any
	LoopIndex int
	HasItem   bool
	// Registers holds the per-run (or per-destiny-bundle) results of
	// registered tasks.
	Registers *Registers
	// Self is the current task's own result (register.self), set while
	// evaluating retry.until, failed_when and changed_when; use
	// domain.Result.Map().
	Self map[string]any
	// CurrentSID is the host being evaluated; "" outside a per-host context
	// (state_changes, on: keeper).
	CurrentSID string
	Soulprint  Soulprint
	// Incarnation has name, host_count, covens, status, members (scenario
	// only). host_count is the size of the current step's target after on:
	// and before where:.
	Incarnation map[string]any
	// State is the committed incarnation.state before this run.
	State map[string]any
	// Run has id, scenario, check_mode.
	Run map[string]any
	// Secrets are the values secret("name") reads: the Keeper's secret
	// store entries the run uses (scenario expressions only).
	Secrets map[string]any
	// Sensitive says the activation carries secret values besides
	// Secrets (secret inputs, sealed state keys): evaluation errors then
	// never quote values (audit finding N4), as with Secrets set.
	Sensitive bool
	// DelegatedFor is set while a task with delegate: runs on a delegate
	// host for one host of the wave (SPEC §9): {sid, soulprint} of that
	// wave host. Nil elsewhere, where reading delegated_for fails.
	DelegatedFor map[string]any
}

// Soulprint is the facts visible to an expression.
type Soulprint struct {
	// Self is the soulprint of the host being evaluated.
	Self map[string]any
	// Hosts are the soulprints of all hosts of the run (soulprint.hosts).
	Hosts []map[string]any
	// Members are the soulprints of the incarnation's members
	// (soulprint.where("…") filters them).
	Members []map[string]any
}

// With returns a shallow copy of a with Self set: the usual way to derive
// the activation of failed_when/changed_when/until from a task's.
func (a *Activation) With(self map[string]any) *Activation {
	c := *a
	c.Self = self
	return &c
}

// ForHost returns a shallow copy of a for one host: CurrentSID and
// soulprint.self set.
func (a *Activation) ForHost(sid string, facts map[string]any) *Activation {
	c := *a
	c.CurrentSID = sid
	c.Soulprint.Self = facts
	return &c
}

// resolver adapts a to CEL's activation interface without copying it.
func (a *Activation) resolver() interpreter.Activation {
	if a == nil {
		a = &Activation{}
	}
	return activation{a}
}

type activation struct{ a *Activation }

var emptyMap = map[string]any{}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return emptyMap
	}
	return m
}

func (r activation) ResolveName(name string) (any, bool) {
	a := r.a
	switch name {
	case "input":
		return a.ordered(orEmpty(a.Input)), true
	case "essence":
		return a.ordered(orEmpty(a.Essence)), true
	case "vars":
		return a.ordered(orEmpty(a.Vars)), true
	case "item":
		if !a.HasItem {
			return missingVal("item is only defined inside a loop: task"), true
		}
		return a.ordered(a.Item), true
	case "loop_index":
		if !a.HasItem {
			return missingVal("loop_index is only defined inside a loop: task"), true
		}
		return int64(a.LoopIndex), true
	case "register":
		return &registerRoot{regs: a.Registers, self: a.Self, sid: a.CurrentSID}, true
	case "soulprint":
		return &soulprintVal{sp: a.Soulprint}, true
	case "incarnation":
		return orEmpty(a.Incarnation), true
	case "state":
		return a.ordered(orEmpty(a.State)), true
	case "run":
		return orEmpty(a.Run), true
	case secretsVar:
		return orEmpty(a.Secrets), true
	case "delegated_for":
		if a.DelegatedFor == nil {
			return missingVal(NoDelegationMsg), true
		}
		return a.DelegatedFor, true
	}
	return nil, false
}

func (activation) Parent() interpreter.Activation { return nil }

// ordered adapts a map or list with a's key order; other values (and every
// value when a has no order) are left to the environment's adapter.
func (a *Activation) ordered(v any) any {
	if a.Order.Empty() {
		return v
	}
	switch v.(type) {
	case map[string]any, []any:
		return orderedAdapter{order: a.Order}.NativeToValue(v)
	}
	return v
}

// Registers holds, per register name, the result map of every host that
// returned one. It is safe for concurrent use: the engine records results
// as they stream in.
type Registers struct {
	mu sync.RWMutex
	m  map[string]map[string]map[string]any
	// skipped holds, per register, the results of hosts on which the
	// task was skipped (by when: or unmet requisites). A skipped host did
	// not answer (SPEC §7, §17): it is not in size(), hosts or field
	// reads, but Get still returns it, so a when: skip satisfies require:.
	skipped map[string]map[string]map[string]any
	// why says, per register of a task that ran on no host, why it has
	// no result (SPEC §7: an empty register is a value).
	why map[string]string
	// gen counts changes (Gen), so a derived copy can be cached.
	gen uint64
}

// Gen is a counter of r's changes: equal values mean equal contents.
func (r *Registers) Gen() uint64 {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// NewRegisters returns an empty set.
func NewRegisters() *Registers {
	return &Registers{m: map[string]map[string]map[string]any{}}
}

// Set records host sid's result under name (its register view, r.Map()).
// A skipped result is kept apart: the host did not answer (SPEC §17), so
// register.<name> does not count or show it.
func (r *Registers) Set(name, sid string, res domain.Result) {
	if res.Status() != domain.StatusSkipped {
		r.SetMap(name, sid, res.Map())
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string]map[string]any{}
	}
	if r.m[name] == nil {
		r.m[name] = map[string]map[string]any{}
	}
	delete(r.m[name], sid)
	if r.skipped == nil {
		r.skipped = map[string]map[string]map[string]any{}
	}
	if r.skipped[name] == nil {
		r.skipped[name] = map[string]map[string]any{}
	}
	r.skipped[name][sid] = res.Map()
	if r.why == nil {
		r.why = map[string]string{}
	}
	if len(r.m[name]) == 0 && res.Msg != "" {
		// The most specific reason: it replaces "inside a block that was
		// skipped" when the block ran and the task itself was skipped.
		r.why[name] = "the task was skipped on every host it targeted (" + res.Msg + ")"
	}
	r.gen++
}

// SetMap records a result map directly (destiny outputs, scenario tests).
func (r *Registers) SetMap(name, sid string, m map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string]map[string]any{}
	}
	if r.m[name] == nil {
		r.m[name] = map[string]map[string]any{}
	}
	r.m[name][sid] = m
	delete(r.skipped[name], sid)
	r.gen++
}

// Declare makes name known with no host results yet (so size() reads 0
// instead of failing with "not registered").
func (r *Registers) Declare(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string]map[string]any{}
	}
	if r.m[name] == nil {
		r.m[name] = map[string]map[string]any{}
		r.gen++
	}
}

// Empty declares name as the register of a task that ran on no host, with
// why (e.g. `task "probe" ran on no host: where: was false on every
// host`): size() is 0, hosts is {}, and reading a field fails with why.
func (r *Registers) Empty(name, why string) {
	r.Declare(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.why == nil {
		r.why = map[string]string{}
	}
	r.why[name] = why
	r.gen++
}

// DeclareUnreached declares the register of a task that was never reached
// (inside a block skipped or filtered out on every host) as empty with
// why, unless name is already known.
func (r *Registers) DeclareUnreached(name, why string) {
	if r.has(name) {
		return
	}
	r.Empty(name, why)
}

// has reports whether name is known.
func (r *Registers) has(name string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.m[name]
	return ok
}

// Hosts returns a copy of name's sid → result map, and whether name is
// known.
func (r *Registers) Hosts(name string) (map[string]map[string]any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.m[name]
	if !ok {
		return nil, false
	}
	return maps.Clone(h), true
}

// Get returns host sid's result under name, a skipped one included (for
// requisites: a when: skip satisfies require:).
func (r *Registers) Get(name, sid string) (map[string]any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if m, ok := r.m[name][sid]; ok {
		return m, ok
	}
	m, ok := r.skipped[name][sid]
	return m, ok
}

// Names lists the known register names, sorted.
func (r *Registers) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// missingVal is the value of a root that is not defined in this context;
// using it fails the evaluation with msg.
func missingVal(msg string) any { return types.NewErrFromString(msg) }

// Transform returns a copy of r in which every host's result map went
// through f (the engine's taint rendering puts canaries in place of the
// secrets a result echoes).
func (r *Registers) Transform(f func(map[string]any) map[string]any) *Registers {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Registers{m: make(map[string]map[string]map[string]any, len(r.m))}
	for name, hosts := range r.m {
		hs := make(map[string]map[string]any, len(hosts))
		for sid, m := range hosts {
			hs[sid] = f(m)
		}
		out.m[name] = hs
	}
	if r.skipped != nil {
		out.skipped = make(map[string]map[string]map[string]any, len(r.skipped))
		for name, hosts := range r.skipped {
			hs := make(map[string]map[string]any, len(hosts))
			for sid, m := range hosts {
				hs[sid] = f(m)
			}
			out.skipped[name] = hs
		}
	}
	if r.why != nil {
		out.why = make(map[string]string, len(r.why))
		for k, v := range r.why {
			out.why[k] = v
		}
	}
	return out
}
