package expr_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/expr"
)

func TestSecretFunction(t *testing.T) {
	env := expr.ForKind(expr.KindScenario)
	act := &expr.Activation{Secrets: map[string]any{"db": "pw-1"}}
	v, err := env.RenderString(t.Context(), `pass=${ upper(secret("db")) }`, act)
	if err != nil || v != "pass=PW-1" {
		t.Fatalf("render: %v, %v", v, err)
	}
	if _, err := env.Compile(`secret(input.x)`); err == nil || !strings.Contains(err.Error(), "string literal") {
		t.Fatalf("a computed name: %v", err)
	}
	if _, err := expr.ForKind(expr.KindDestiny).Compile(`secret("db")`); err == nil {
		t.Fatal("secret() compiled in a destiny expression (evaluated on souls)")
	}
	if got := expr.SecretNames(`secret("b") + secret( 'a' ) + secret("b")`); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("SecretNames = %v", got)
	}
	if _, err := env.RenderString(t.Context(), `${ secret("nope") }`, act); err == nil {
		t.Fatal("an unknown secret rendered")
	}
}

// TestN4ErrorsNeverQuoteSecrets reproduces audit finding N4: an error
// about a value computed from a secret quoted parts of it
// (from_json → "invalid character 'Z'…", b64dec → "illegal base64 data at
// input byte 5", and CEL's own timestamp(), matches() and map lookups).
// The error names the function and the problem, never the value's bytes;
// the same holds for an activation marked Sensitive (secret inputs).
func TestN4ErrorsNeverQuoteSecrets(t *testing.T) {
	const pw = "Zx7!q(Vault" // not JSON, not base64, not a timestamp, not a regexp
	env := expr.ForKind(expr.KindScenario)
	cases := []struct{ src, want string }{
		{`${ from_json(secret("dbpw")) }`, "from_json: the value is not valid JSON"},
		{`${ b64dec(secret("dbpw")) }`, "b64dec: the value is not valid base64"},
		{`${ timestamp(secret("dbpw")) }`, "timestamp"},
		{`${ "a".matches(secret("dbpw")) }`, "regexp"},
		{`${ {"a": 1}[secret("dbpw")] }`, "no such key"},
	}
	for _, c := range cases {
		_, err := env.RenderString(t.Context(), c.src, &expr.Activation{Secrets: map[string]any{"dbpw": pw}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.src, err, c.want)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), c.src, "") // the expression's own text is fine
		for _, leak := range []string{"'Z'", "byte", "Zx7", "q(V", "Vault", "(Vault"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: the error quotes the secret (%q): %s", c.src, leak, msg)
			}
		}
	}
	// A secret input: the engine marks the activation Sensitive.
	act := &expr.Activation{Input: map[string]any{"pw": pw}, Sensitive: true}
	_, err := env.RenderString(t.Context(), `${ timestamp(input.pw) }`, act)
	if err == nil || strings.Contains(strings.ReplaceAll(err.Error(), "input.pw", ""), "Vault") {
		t.Fatalf("a secret input's error: %v", err)
	}
}
