package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
)

// Taint finds the rendered values derived from secrets (SPEC §10.2
// "Derived secrets are masked"). Canary is the task's activation with
// every secret value replaced by a canary of the same length; a task's
// params are rendered a second time against it, and each rendered string
// that differs from the real rendering depends on a secret, whatever CEL
// function, concatenation or interpolation produced it: Mark receives it
// (the engine masks it, by value, in everything it stores or streams).
type Taint struct {
	Canary *expr.Activation
	Mark   func(vals ...string)
}

// MarkDerived renders src against canary and marks each string of real
// (src rendered against the real activation) that differs. When the
// canary rendering fails, every interpolated string is marked. It reports
// whether anything was marked.
func MarkDerived(ctx context.Context, env *expr.Env, src map[string]any, real map[string]any, canary *expr.Activation, mark func(...string)) bool {
	cv, err := env.RenderMap(ctx, src, canary)
	var marked []string
	if err != nil {
		collectInterpolated(src, real, &marked)
	} else {
		diffLeaves(real, cv, &marked)
	}
	if len(marked) > 0 {
		mark(marked...)
	}
	return len(marked) > 0
}

// MarkDiff marks each leaf of real that differs from the same leaf of
// canary (a value rendered against the canary activation), and reports
// whether it marked any.
func MarkDiff(real, canary any, mark func(...string)) bool {
	var marked []string
	diffLeaves(real, canary, &marked)
	if len(marked) > 0 {
		mark(marked...)
	}
	return len(marked) > 0
}

// params is MarkDerived over t's params for one attempt: vars and
// the loop item are taken from canary as the task sees them.
func (tn *Taint) params(ctx context.Context, t *dsl.Task, env *expr.Env, params map[string]any) bool {
	if tn == nil || tn.Canary == nil {
		return false
	}
	cact, err := TaskActivation(ctx, t, tn.Canary, env)
	if err != nil {
		var marked []string
		collectInterpolated(t.Params, params, &marked)
		tn.Mark(marked...)
		return len(marked) > 0
	}
	return MarkDerived(ctx, env, t.Params, params, cact, tn.Mark)
}

// withItem returns tn for loop item i (the canary's item is the canary
// rendering's, when the loop renders the same number of items).
func (tn *Taint) withItem(ctx context.Context, t *dsl.Task, env *expr.Env, i int, item any) *Taint {
	if tn == nil || tn.Canary == nil {
		return tn
	}
	c := *tn.Canary
	c.Item, c.LoopIndex, c.HasItem = item, i, true
	if items, err := loopItems(ctx, t, tn.Canary, env); err == nil && i < len(items) {
		c.Item = items[i]
	}
	return &Taint{Canary: &c, Mark: tn.Mark}
}

func diffLeaves(real, canary any, out *[]string) {
	switch x := real.(type) {
	case string:
		if c, ok := canary.(string); !ok || c != x {
			*out = append(*out, x)
		}
	case map[string]any:
		cm, _ := canary.(map[string]any)
		for k, v := range x {
			diffLeaves(v, cm[k], out)
		}
	case []any:
		cl, _ := canary.([]any)
		for i, v := range x {
			var cv any
			if i < len(cl) {
				cv = cl[i]
			}
			diffLeaves(v, cv, out)
		}
	default:
		// A number derived from a secret (a port, a PIN) is masked by its
		// text; short ones are too common to mask without shredding
		// unrelated output, as a true or false is.
		if n, ok := numberText(x); ok && len(n) >= minSecretLine {
			if c, ok := numberText(canary); !ok || c != n {
				*out = append(*out, n)
			}
		}
	}
}

// numberText is the text of a number value.
func numberText(v any) (string, bool) {
	switch x := v.(type) {
	case int, int32, int64, uint, uint32, uint64:
		return fmt.Sprint(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

// collectInterpolated marks the strings of real whose source holds ${.
func collectInterpolated(src, real any, out *[]string) {
	switch s := src.(type) {
	case string:
		if containsInterp(s) {
			var all []string
			diffLeaves(real, nil, &all)
			*out = append(*out, all...)
		}
	case map[string]any:
		rm, _ := real.(map[string]any)
		for k, v := range s {
			collectInterpolated(v, rm[k], out)
		}
	case []any:
		rl, _ := real.([]any)
		for i, v := range s {
			if i < len(rl) {
				collectInterpolated(v, rl[i], out)
			}
		}
	}
}

func containsInterp(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' && s[i+1] == '{' {
			return true
		}
	}
	return false
}

// digestKeys are the result fields that would let a viewer test guesses
// of a secret offline: never published for content derived from one
// (audit L9).
var digestKeys = []string{"sha256", "size", "checksum", "md5"}

// StripDigests removes the hash and size of written content from r.
func StripDigests(r domain.Result) domain.Result {
	if r.Data != nil {
		for _, k := range digestKeys {
			delete(r.Data, k)
		}
	}
	for i := range r.Results {
		r.Results[i] = StripDigests(r.Results[i])
	}
	return r
}

// templateData reports whether the data a core.file.rendered template
// gets (TemplateData of act) holds a secret or a value derived from one.
func (tn *Taint) templateData(ctx context.Context, t *dsl.Task, env *expr.Env, act *expr.Activation) bool {
	if tn == nil || tn.Canary == nil {
		return false
	}
	cact, err := TaskActivation(ctx, t, tn.Canary, env)
	if err != nil {
		return true
	}
	return !reflect.DeepEqual(TemplateData(act), TemplateData(cact))
}

// DiffHidden is the diff of a file rendered on the soul from data that
// holds a secret.
const DiffHidden = "(diff withheld: the template's data holds a secret)"

// HideDiff replaces r's diff (and its nested results') by DiffHidden.
func HideDiff(r domain.Result) domain.Result {
	if r.Diff != "" {
		r.Diff = DiffHidden
	}
	for i := range r.Results {
		r.Results[i] = HideDiff(r.Results[i])
	}
	return r
}
