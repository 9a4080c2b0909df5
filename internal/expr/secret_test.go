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
