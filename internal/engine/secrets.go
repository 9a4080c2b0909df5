package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
)

// SecretSource gives the values of the Keeper's secret store (SPEC
// §10.5): internal/secrets.Store.
type SecretSource interface {
	Value(ctx context.Context, name string) (string, error)
}

// ScopedSecrets is a SecretSource whose secrets belong to scopes (issue
// 34): Readable refuses a secret to a scenario of an incarnation outside
// its scope. The engine asks it at validation and again when a run loads
// the values.
type ScopedSecrets interface {
	Readable(ctx context.Context, name, service, incarnation string) error
}

// secretReadable asks the secret source whether incarnation may read
// secret name (always, when the source has no scopes).
func (e *Engine) secretReadable(ctx context.Context, name, service, incarnation string) error {
	if sc, ok := e.cfg.Secrets.(ScopedSecrets); ok {
		return sc.Readable(ctx, name, service, incarnation)
	}
	return nil
}

// SecretRefs lists the secret("name") calls of the scenario's files,
// each with the file:line of its first use.
func SecretRefs(sc *dsl.Scenario) map[string]string { return secretRefs(sc) }

func secretRefs(sc *dsl.Scenario) map[string]string {
	out := map[string]string{}
	for _, f := range slices.Sorted(maps.Keys(sc.Files)) {
		if !strings.HasSuffix(f, ".yml") && !strings.HasSuffix(f, ".yaml") {
			continue
		}
		sn := bufio.NewScanner(bytes.NewReader(sc.Files[f]))
		sn.Buffer(nil, 4<<20)
		for line := 1; sn.Scan(); line++ {
			for _, n := range expr.SecretNames(sn.Text()) {
				if _, ok := out[n]; !ok {
					out[n] = fmt.Sprintf("%s:%d", path.Join(sc.Dir, f), line)
				}
			}
		}
	}
	return out
}

// checkSecrets is the run-start validation of secrets: every secret("…")
// of the scenario names a secret of the store, and no state_changes value
// reads a secret input or secret() directly (a secret's derivative is
// never committed to incarnation.state, SPEC §10.2) unless state_schema
// declares its key secret: true.
func (e *Engine) checkSecrets(ctx context.Context, svc *dsl.Service, sc *dsl.Scenario, service, incarnation string) error {
	for _, n := range slices.Sorted(maps.Keys(secretRefs(sc))) {
		pos := secretRefs(sc)[n]
		if e.cfg.Secrets == nil {
			return domain.Errorf(domain.CodeInvalid, "%s: secret(%q): this keeper has no secret store", pos, n)
		}
		if _, err := e.cfg.Secrets.Value(ctx, n); err != nil {
			if domain.ErrorCode(err) == domain.CodeNotFound {
				return domain.Errorf(domain.CodeInvalid, "%s: secret(%q) is not in the Keeper's secret store (set it with: soulctl secret set %s)", pos, n, n)
			}
			return fmt.Errorf("%s: secret(%q): %w", pos, n, err)
		}
		if err := e.secretReadable(ctx, n, service, incarnation); err != nil {
			return &domain.Error{Code: domain.CodeInvalid, Message: fmt.Sprintf("%s: secret(%q): %v", pos, n, err), Err: err}
		}
	}
	secretInputs := sc.Input.Secrets()
	secretKeys := svc.SecretStateKeys()
	for _, k := range slices.Sorted(maps.Keys(sc.StateChanges.Sets)) {
		if slices.Contains(secretKeys, k) {
			continue // sealed at commit, shown as ****
		}
		var srcs []string
		collectStrings(sc.StateChanges.Sets[k], &srcs)
		for _, s := range srcs {
			tainted := len(expr.SecretNames(s)) > 0
			if t, err := expr.ForKind(expr.KindScenario).ParseTemplate(s); err == nil {
				for _, in := range t.Refs().Inputs {
					tainted = tainted || slices.Contains(secretInputs, in)
				}
			}
			if tainted {
				pos, ok := sc.StateChanges.SetPos[k]
				if !ok {
					pos = sc.StateChanges.Pos
				}
				return domain.Errorf(domain.CodeInvalid, "state_changes (%s): %s is computed from a secret: it would be committed to incarnation.state, which every viewer reads; keep secrets out of state", pos, k)
			}
		}
	}
	return nil
}

func collectStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}

// loadSecrets reads the values of the store secrets the scenario uses,
// once per run: a run keeps the values it started with (rotation takes
// effect for runs that start later). They become masked values.
func (r *runner) loadSecrets(ctx context.Context) (map[string]any, error) {
	refs := secretRefs(r.sc)
	if len(refs) == 0 {
		return nil, nil
	}
	if r.e.cfg.Secrets == nil {
		return nil, fmt.Errorf("the scenario uses secret() and this keeper has no secret store")
	}
	out := make(map[string]any, len(refs))
	for n, pos := range refs {
		// Checked again at run time: the secret's scope may have changed
		// since the run was validated (or the run is a resume).
		if err := r.e.secretReadable(ctx, n, r.inc.Service, r.inc.Name); err != nil {
			return nil, fmt.Errorf("%s: secret(%q): %w", pos, n, err)
		}
		v, err := r.e.cfg.Secrets.Value(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("%s: secret(%q): %w", pos, n, err)
		}
		out[n] = v
		r.addSecrets(v)
	}
	return out, nil
}

// canary returns a string of s's length that differs from s at every byte.
func canary(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == 'q' {
			b[i] = 'z'
		} else {
			b[i] = 'q'
		}
	}
	return string(b)
}

// buildCanary sets r.canaryBase: the base activation with the values of
// secret inputs and store secrets replaced by canaries.
func (r *runner) buildCanary() {
	names := r.sc.Input.Secrets()
	if len(names) == 0 && len(r.base.Secrets) == 0 && len(r.secretState) == 0 {
		return
	}
	c := r.base
	c.Input = maps.Clone(r.base.Input)
	for _, n := range names {
		if v, ok := c.Input[n]; ok && v != nil {
			c.Input[n] = canaryValue(v)
		}
	}
	if len(r.secretState) > 0 {
		c.State = maps.Clone(r.base.State)
		for k := range r.secretState {
			c.State[k] = canaryValue(c.State[k])
		}
	}
	if r.base.Secrets != nil {
		c.Secrets = make(map[string]any, len(r.base.Secrets))
		for k, v := range r.base.Secrets {
			s, _ := v.(string)
			c.Secrets[k] = canary(s)
		}
	}
	r.canaryBase = &c
}

// taint is the executor's Taint for act (nil when the run has no secrets).
func (r *runner) taint(ctx context.Context, act *expr.Activation) *executor.Taint {
	c := r.canaryOf(ctx, act)
	if c == nil {
		return nil
	}
	return &executor.Taint{Canary: c, Mark: r.addSecrets}
}

// canaryOf is act with the canary's input and secrets, and the scenario's
// vars rendered from them.
func (r *runner) canaryOf(ctx context.Context, act *expr.Activation) *expr.Activation {
	if r.canaryBase == nil || act == nil {
		return nil
	}
	c := *act
	secrets := r.secretList()
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	if len(secrets) > 0 && len(act.Vars) > 0 {
		// Vars of enclosing blocks derived from a secret were marked when
		// the block was entered: canaries take their place.
		c.Vars, _ = withCanaries(act.Vars, secrets).(map[string]any)
	}
	c.Input, c.Secrets, c.State = r.canaryBase.Input, r.canaryBase.Secrets, r.canaryBase.State
	// A result that echoes a secret (a register field holding a param)
	// passes it on: in the canary rendering it echoes the canary.
	if len(secrets) > 0 {
		swap := func(m map[string]any) map[string]any {
			v, _ := withCanaries(m, secrets).(map[string]any)
			return v
		}
		c.Registers = r.canaryRegisters(act.Registers, len(secrets), swap)
		if act.Self != nil {
			c.Self = swap(act.Self)
		}
	}
	if len(r.sc.Vars) > 0 {
		vars := maps.Clone(c.Vars)
		if vars == nil {
			vars = map[string]any{}
		}
		maps.Copy(vars, r.scenarioVars(ctx, &c))
		c.Vars = vars
	}
	return &c
}

// CheckSecretInputs refuses to start scenario with an input that carries
// one of secrets (values the caller knows to be secret, e.g. a Checker
// procedure's secret vars) when the scenario does not declare that input
// secret: true: its value would be kept in clear in the run's input, the
// incarnation and the audit log (audit L10). The scenario is the one of
// the incarnation's pinned commit, or of service's current commit for a
// create (incarnation "").
func (e *Engine) CheckSecretInputs(ctx context.Context, incarnation, service, scenario string, input map[string]any, secrets []string) error {
	if len(input) == 0 || len(secrets) == 0 {
		return nil
	}
	commit := ""
	if incarnation != "" {
		inc, err := e.cfg.Store.GetIncarnation(ctx, incarnation)
		if err != nil {
			return fmt.Errorf("incarnation %s: %w", incarnation, err)
		}
		service, commit = inc.Service, inc.Commit
	} else {
		rec, err := e.cfg.Store.GetService(ctx, service)
		if err != nil {
			return fmt.Errorf("service %s: %w", service, err)
		}
		commit = rec.Commit
	}
	svc, err := e.cfg.Services.Open(ctx, service, commit)
	if err != nil {
		return fmt.Errorf("opening service %s at %s: %w", service, commit, err)
	}
	sc := svc.Scenarios[scenario]
	if sc == nil {
		return nil // StartRun says so
	}
	declared := sc.Input.Secrets()
	for _, k := range slices.Sorted(maps.Keys(input)) {
		if slices.Contains(declared, k) {
			continue
		}
		text := expr.Stringify(input[k])
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				return domain.Errorf(domain.CodeInvalid, "input %q of scenario %s (service %s) is given a secret but is not declared secret: true: the run's input, the incarnation and the audit log would keep it in clear; declare it secret: true in the scenario's input, or pass no secret there", k, scenario, service)
			}
		}
	}
	return nil
}

// markBlockVars marks the values of block t's vars (in ba, its children's
// activation) that are derived from a secret: the children's canary
// activations (canaryOf) then carry canaries in their place.
func (r *runner) markBlockVars(ctx context.Context, t *dsl.Task, a, ba *expr.Activation) {
	if len(t.Vars) == 0 {
		return
	}
	c := r.canaryOf(ctx, a)
	if c == nil {
		return
	}
	real := make(map[string]any, len(t.Vars))
	for k := range t.Vars {
		real[k] = ba.Vars[k]
	}
	cba, err := executor.TaskActivation(ctx, t, c, r.env)
	if err != nil {
		executor.MarkDiff(real, nil, r.addSecrets)
		return
	}
	canary := make(map[string]any, len(t.Vars))
	for k := range t.Vars {
		canary[k] = cba.Vars[k]
	}
	executor.MarkDiff(real, canary, r.addSecrets)
}

// withCanaries returns a copy of v with every secret (longest first) in
// its strings replaced by the secret's canary.
func withCanaries(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		for _, s := range secrets {
			if s != "" && strings.Contains(x, s) {
				x = strings.ReplaceAll(x, s, canary(s))
			}
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = withCanaries(e, secrets)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withCanaries(e, secrets)
		}
		return out
	}
	if n, ok := numberLeaf(v); ok && slices.Contains(secrets, n) {
		return canaryValue(v)
	}
	return v
}

// numberLeaf is the text of a number value (as a derived number is
// marked).
func numberLeaf(v any) (string, bool) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// canaryCache keeps the canary copy of the run's registers until they or
// the run's secrets change: every host's taint rendering of a task reads
// the same registers, and copying them per host would cost hosts² in a
// large fleet.
type canaryCache struct {
	mu       sync.Mutex
	src      *expr.Registers
	gen      uint64
	nSecrets int
	out      *expr.Registers
}

// canaryRegisters returns regs with canaries for the secrets (swap), from
// the cache when neither changed.
func (r *runner) canaryRegisters(regs *expr.Registers, nSecrets int, swap func(map[string]any) map[string]any) *expr.Registers {
	c := &r.canaryRegs
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := regs.Gen()
	if c.out != nil && c.src == regs && c.gen == gen && c.nSecrets == nSecrets {
		return c.out
	}
	c.src, c.gen, c.nSecrets, c.out = regs, gen, nSecrets, regs.Transform(swap)
	return c.out
}
