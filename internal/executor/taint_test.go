package executor_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
)

// taintCanary mirrors the engine's canary: same length, every byte
// different.
func taintCanary(s string) string {
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

// TestTaintProperty: random CEL expressions over a tainted input never
// give a rendered string that holds the secret (or its base64, upper
// case, SHA-256) without being marked, so masking by the marked values
// leaves none of them.
func TestTaintProperty(t *testing.T) {
	const secret = "Hunter2-S3cr3t!"
	wraps := []func(string) string{
		func(x string) string { return "upper(" + x + ")" },
		func(x string) string { return "lower(" + x + ")" },
		func(x string) string { return "b64enc(" + x + ")" },
		func(x string) string { return "sha256(" + x + ")" },
		func(x string) string { return "to_json(" + x + ")" },
		func(x string) string { return "trim(" + x + ")" },
		func(x string) string { return x + ` + "-tail"` },
		func(x string) string { return `"head:" + ` + x },
		func(x string) string { return x + ".substring(1)" },
		func(x string) string { return x + `.replace("e", "E")` },
		func(x string) string { return `join(split(` + x + `, "-"), ":")` },
		func(x string) string { return `default(` + x + `, "none")` },
		func(x string) string { return `[` + x + `, "b"].join(",")` },
		func(x string) string { return `{"k": ` + x + `}.k` },
		func(x string) string { return `(` + x + ` == "x" ? "same" : ` + x + `)` },
		func(x string) string { return `b64dec(b64enc(` + x + `))` },
	}
	env := expr.ForKind(expr.KindScenario)
	real := &expr.Activation{Input: map[string]any{"pw": secret, "user": "app"}, Secrets: map[string]any{"db": secret}}
	canary := &expr.Activation{Input: map[string]any{"pw": taintCanary(secret), "user": "app"}, Secrets: map[string]any{"db": taintCanary(secret)}}
	rng := rand.New(rand.NewPCG(18, 5))
	for i := range 1500 {
		x := "input.pw"
		if rng.IntN(2) == 0 {
			x = `secret("db")`
		}
		for range 1 + rng.IntN(4) {
			x = wraps[rng.IntN(len(wraps))](x)
		}
		src := map[string]any{"a": "${ " + x + " }", "b": "pre ${ " + x + " } post ${ input.user }", "c": "plain ${ input.user }"}
		got, err := env.RenderMap(t.Context(), src, real)
		if err != nil {
			continue // an expression that fails renders nothing
		}
		var marked []string
		executor.MarkDerived(t.Context(), env, src, got, canary, func(v ...string) { marked = append(marked, v...) })
		if slices.Contains(marked, "plain app") {
			t.Fatalf("#%d %s: an untainted value was marked", i, x)
		}
		for _, k := range []string{"a", "b"} {
			s, _ := got[k].(string)
			masked := executor.MaskString(s, append(marked, secret))
			if masked != executor.MaskText && !strings.Contains(masked, executor.MaskText) && s != "same" {
				t.Fatalf("#%d %s: %q rendered from a secret is not masked (marked %q)", i, x, s, marked)
			}
			if strings.Contains(masked, secret) {
				t.Fatalf("#%d %s: the secret survives masking in %q", i, x, masked)
			}
		}
	}
}
