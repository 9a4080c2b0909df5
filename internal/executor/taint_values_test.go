package executor_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
)

// TestTaintPropertyValues: random CEL expressions that turn a secret
// number or string into numbers, lists and maps give typed params whose
// derived leaves are all marked, so masking leaves none of them (numbers
// of four or more digits: shorter ones are not masked, as a secret line
// shorter than four characters is not).
func TestTaintPropertyValues(t *testing.T) {
	const pw, pin = "Hunter2-S3cr3t!", int64(40917)
	nums := []func(string) string{
		func(x string) string { return x + " * 7" },
		func(x string) string { return x + " + 1000" },
		func(x string) string { return x + " - 1" },
		func(x string) string { return "int(string(" + x + `) + "3")` },
		func(x string) string { return "(" + x + " > 5 ? " + x + " * 3 : " + x + " + 11)" },
	}
	shapes := []func(string) string{
		func(x string) string { return x },
		func(x string) string { return "[" + x + ", 1]" },
		func(x string) string { return `{"k": ` + x + `, "plain": "app"}` },
		func(x string) string { return "[[" + x + "]]" },
		func(x string) string { return "double(" + x + ") / 2.0" },
		func(x string) string { return `[input.pw.split("-"), ` + x + "]" },
	}
	env := expr.ForKind(expr.KindScenario)
	real := &expr.Activation{Input: map[string]any{"pw": pw, "pin": pin}}
	canary := &expr.Activation{Input: map[string]any{"pw": taintCanary(pw), "pin": pin + 1}}
	rng := rand.New(rand.NewPCG(18, 6))
	checked := 0
	for i := range 800 {
		x := "input.pin"
		for range 1 + rng.IntN(3) {
			x = nums[rng.IntN(len(nums))](x)
		}
		x = shapes[rng.IntN(len(shapes))](x)
		src := map[string]any{"a": "${ " + x + " }"}
		got, err := env.RenderMap(t.Context(), src, real)
		if err != nil {
			continue
		}
		var marked []string
		executor.MarkDerived(t.Context(), env, src, got, canary, func(v ...string) { marked = append(marked, v...) })
		masked := executor.MaskValue(got, append(marked, pw, strconv.FormatInt(pin, 10)))
		b, _ := json.Marshal(masked)
		for _, leaf := range leaves(got["a"]) {
			if len(leaf) >= 4 && leaf != "app" && strings.Contains(string(b), leaf) {
				t.Fatalf("#%d %s: %s derived from a secret survives masking: %s (marked %q)", i, x, leaf, b, marked)
			}
		}
		if !strings.Contains(string(b), `"app"`) && strings.Contains(x, "plain") {
			t.Fatalf("#%d %s: a plain value was masked: %s", i, x, b)
		}
		checked++
	}
	if checked < 400 {
		t.Fatalf("only %d of 800 expressions rendered: the generator is broken", checked)
	}
}

// leaves returns the texts of v's string and number leaves.
func leaves(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case int64:
		return []string{strconv.FormatInt(x, 10)}
	case float64:
		return []string{strconv.FormatFloat(x, 'f', -1, 64)}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, leaves(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}
