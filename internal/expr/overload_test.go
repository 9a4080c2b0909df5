package expr

import (
	"context"
	"strings"
	"testing"
)

// TestNoSuchOverloadHint: a type mismatch found at evaluation (CEL's bare
// "no such overload") says what it usually means and how to convert.
func TestNoSuchOverloadHint(t *testing.T) {
	p, err := ForKind(KindScenario).CompileBool(`input.port > "6000"`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.EvalBool(context.Background(), seedActivation(t))
	if err == nil || !strings.Contains(err.Error(), "no such overload") || !strings.Contains(err.Error(), "convert with int()") {
		t.Fatalf("err = %v", err)
	}
}
