package dsl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
)

func testInputs() Inputs {
	return Inputs{
		{Name: "banner_text", Type: InputString, Default: "Managed by Soul Stack", HasDefault: true},
		{Name: "password", Type: InputString, Required: true, Secret: true},
		{Name: "port", Type: InputInteger, Default: int64(6379), HasDefault: true},
		{Name: "ratio", Type: InputNumber},
		{Name: "debug", Type: InputBoolean},
		{Name: "peers", Type: InputList, Default: []any{"a"}, HasDefault: true},
		{Name: "extra", Type: InputMap},
	}
}

func TestInputsResolve(t *testing.T) {
	tests := []struct {
		name    string
		given   map[string]any
		want    map[string]any
		wantErr []string
	}{
		{
			name:  "defaults and nil for optional",
			given: map[string]any{"password": "pw"},
			want: map[string]any{
				"banner_text": "Managed by Soul Stack", "password": "pw", "port": int64(6379),
				"ratio": nil, "debug": nil, "peers": []any{"a"}, "extra": nil,
			},
		},
		{
			name: "values are normalized",
			given: map[string]any{
				"password": "pw", "port": 6380.0, "ratio": 2, "debug": true,
				"peers": []string{"x", "y"}, "extra": map[string]int{"k": 1}, "banner_text": "hi",
			},
			want: map[string]any{
				"banner_text": "hi", "password": "pw", "port": int64(6380), "ratio": int64(2), // an integer given to a number input stays an integer (SPEC §9)
				"debug": true, "peers": []any{"x", "y"}, "extra": map[string]any{"k": 1},
			},
		},
		{
			name:  "JSON numbers",
			given: map[string]any{"password": "pw", "port": json.Number("7000"), "ratio": json.Number("0.5")},
			want: map[string]any{
				"banner_text": "Managed by Soul Stack", "password": "pw", "port": int64(7000),
				"ratio": 0.5, "debug": nil, "peers": []any{"a"}, "extra": nil,
			},
		},
		{
			name:  "every problem at once",
			given: map[string]any{"prot": 1, "port": 1.5, "debug": "yes", "peers": "a,b", "extra": []any{}, "banner_text": 3, "zzz": true},
			wantErr: []string{
				`unknown input "prot" (declared: banner_text, password, port, ratio, debug, peers, extra)`,
				`unknown input "zzz"`,
				"input banner_text: must be a string, got integer 3",
				"missing required input password (string)",
				"input port: must be an integer, got number 1.5",
				"input debug: must be a boolean, got string \"yes\"",
				"input peers: must be a list, got string \"a,b\"",
				"input extra: must be a map, got a list",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testInputs().Resolve(tt.given)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Resolve succeeded: %v", got)
				}
				if domain.ErrorCode(err) != domain.CodeInvalid {
					t.Errorf("error code = %s, want invalid", domain.ErrorCode(err))
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveDoesNotShareDefaults(t *testing.T) {
	in := testInputs()
	a, err := in.Resolve(map[string]any{"password": "x"})
	if err != nil {
		t.Fatal(err)
	}
	a["peers"].([]any)[0] = "mutated"
	b, _ := in.Resolve(map[string]any{"password": "x"})
	if b["peers"].([]any)[0] != "a" {
		t.Errorf("a resolved default aliases the declaration: %v", b["peers"])
	}
}

func TestInputsHelpers(t *testing.T) {
	in := testInputs()
	if diff := cmp.Diff([]string{"password"}, in.Secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	if in.Get("port").Type != InputInteger || in.Get("nope") != nil {
		t.Error("Get does not find declared inputs by name")
	}
}

// TestResolveErrorSaysWhy: the reasons are in the error's message, which is
// what an API client is shown (the cause under a *domain.Error is not), and
// a secret value is never quoted in them.
func TestResolveErrorSaysWhy(t *testing.T) {
	_, err := testInputs().Resolve(map[string]any{"password": 424242, "port": "many"})
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeInvalid {
		t.Fatalf("error %v, want a *domain.Error with code invalid", err)
	}
	for _, w := range []string{
		`input port: must be an integer, got string "many"`,
		"input password: must be a string, got an integer (value not shown: the input is secret)",
	} {
		if !strings.Contains(de.Message, w) {
			t.Errorf("message %q does not say %q", de.Message, w)
		}
	}
	if strings.Contains(err.Error(), "424242") {
		t.Errorf("error %q quotes the secret value", err)
	}
}
