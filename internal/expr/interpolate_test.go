package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTemplateRender(t *testing.T) {
	ctx := context.Background()
	env := ForKind(KindScenario)
	act := seedActivation(t)
	act.Input["ratio"] = 1.5
	act.Input["whole"] = 2.0
	act.Input["tags"] = []any{"a", "b"}
	act.Input["conf"] = map[string]any{"k": "v"}
	act.Input["nothing"] = nil
	tests := []struct {
		name string
		src  string
		want any
	}{
		{"seed banner with newline", "${ input.banner_text }\n", "Managed by Soul Stack\n"},
		{"whole string is typed string", "${ input.banner_text }", "Managed by Soul Stack"},
		{"whole int stays int", "${ input.port }", int64(6379)},
		{"whole arithmetic", "${ input.port + 1 }", int64(6380)},
		{"whole bool", "${ input.port > 1 }", true},
		{"whole list", "${ input.tags }", []any{"a", "b"}},
		{"whole map", "${ input.conf }", map[string]any{"k": "v"}},
		{"whole null", "${ input.nothing }", nil},
		{"spaces around make a string", " ${ input.port } ", " 6379 "},
		{"int in text", "port=${ input.port }", "port=6379"},
		{"integral double without .0", "x${ input.whole }", "x2"},
		{"fractional double", "x${ input.ratio }", "x1.5"},
		{"list as JSON", "tags=${ input.tags }", `tags=["a","b"]`},
		{"map as JSON", "conf=${ input.conf }", `conf={"k":"v"}`},
		{"null as empty", "[${ input.nothing }]", "[]"},
		{"bool in text", "ok=${ true }", "ok=true"},
		{"two expressions", "${ input.version }-${ essence.redis_version }", "7.0-7.0.15"},
		{"escape", "$${ input.port } is ${ input.port }", "${ input.port } is 6379"},
		{"only escape", "cost: $${HOME}", "cost: ${HOME}"},
		{"braces in map literal", "${ {'a': {'b': 1}}.a.b }", int64(1)},
		{"closing brace in a string literal", `${ "}" + '{' }`, "}{"},
		{"triple-quoted string literal", `${ '''a}b''' }`, "a}b"},
		{"escaped quote in literal", `${ "a\"}" }`, `a"}`},
		{"no interpolation", "plain text", "plain text"},
		{"register in text", "role=${ register.redis_role.stdout }", "role=slave"},
		{"dollar without brace", "$HOME and $ {x}", "$HOME and $ {x}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := env.RenderString(ctx, tt.src, act)
			if err != nil {
				t.Fatalf("RenderString(%q): %v", tt.src, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RenderString(%q) (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	env := ForKind(KindScenario)
	tests := []struct {
		src, want string
	}{
		{"port ${ input.port", "${ at offset 5: unterminated ${: missing the closing }"},
		{"${ }", "${ at offset 0: empty expression"},
		{"${ 'abc }", "unterminated string literal inside ${ }"},
		{"${ input.port + }", "${ input.port + }: col 13: Syntax error: mismatched input '<EOF>'"},
		{"${ imput.x }", "${ imput.x }: col 1: unknown name imput (roots are input, essence, vars, item, loop_index, register, soulprint, incarnation, state, run, delegated_for) (did you mean input?)"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := env.ParseTemplate(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseTemplate(%q) error = %v, want it to contain %q", tt.src, err, tt.want)
			}
		})
	}
}

func TestRenderDeep(t *testing.T) {
	ctx := context.Background()
	env := ForKind(KindScenario)
	act := seedActivation(t)
	params := map[string]any{
		"path":      "/etc/${ input.banner_text.size() }.conf",
		"count":     "${ input.port }",
		"vars":      map[string]any{"max_memory": "${ essence.redis_version }", "n": 3},
		"list":      []any{"${ input.version }", 1, true, nil, []any{"${ 1 + 1 }"}},
		"untouched": 2.5,
	}
	want := map[string]any{
		"path":      "/etc/21.conf",
		"count":     int64(6379),
		"vars":      map[string]any{"max_memory": "7.0.15", "n": 3},
		"list":      []any{"7.0", 1, true, nil, []any{int64(2)}},
		"untouched": 2.5,
	}
	got, err := env.RenderMap(ctx, params, act)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RenderMap (-want +got):\n%s", diff)
	}
	if params["count"] != "${ input.port }" {
		t.Errorf("RenderMap modified its input: %v", params["count"])
	}

	_, err = env.Render(ctx, map[string]any{"vars": map[string]any{"x": []any{"ok", "${ input.missing }"}}}, act)
	if err == nil || !strings.HasPrefix(err.Error(), "vars.x[1]: ") || !strings.Contains(err.Error(), "no such key: missing") {
		t.Errorf("deep render error = %v, want it to name vars.x[1] and the missing key", err)
	}
}

func TestStringify(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, ""},
		{"s", "s"},
		{int64(-3), "-3"},
		{uint64(7), "7"},
		{3.0, "3"},
		{0.1, "0.1"},
		{1e21, "1e+21"},
		{true, "true"},
		{[]any{1, "a"}, `[1,"a"]`},
		{map[string]any{"b": 1, "a": 2}, `{"a":2,"b":1}`},
		{[]byte("raw"), "raw"},
	}
	for _, tt := range tests {
		if got := Stringify(tt.v); got != tt.want {
			t.Errorf("Stringify(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{
		"${ input.banner_text }\n", "$${ x }", "${ {'a': '}'}.a }", "${", "${ '''", "a ${ input.port } b ${ register.redis_role.stdout }",
		`${ "\"}" }`, "${ r'\\' }", "${ size(soulprint.hosts.where(\"self.os.family == 'debian'\")) }", "}${}{",
	} {
		f.Add(s)
	}
	env := ForKind(KindScenario)
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := env.ParseTemplate(s)
		if !HasInterpolation(s) {
			if err != nil {
				t.Fatalf("plain string %q failed to parse: %v", s, err)
			}
			got, err := tpl.Render(context.Background(), nil)
			if err != nil || got != s {
				t.Fatalf("plain string %q rendered as %v, %v", s, got, err)
			}
			return
		}
		if err != nil {
			return
		}
		act := seedActivation(t)
		out, err := tpl.Render(context.Background(), act)
		if err == nil && !tpl.Whole() {
			if _, ok := out.(string); !ok {
				t.Fatalf("%q with text around yielded %T, want string", s, out)
			}
		}
	})
}
