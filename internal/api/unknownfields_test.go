package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
)

// TestUnknownRequestFieldsRefused: every request body openapi.json declares
// with additionalProperties: false is refused with a 400 naming an unknown
// field, so the document tells clients the truth about strictness.
func TestUnknownRequestFieldsRefused(t *testing.T) {
	e := newEnv(t)
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				AdditionalProperties *bool `json:"additionalProperties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ops := range doc.Paths {
		for method, opRaw := range ops {
			var op struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref                  string `json:"$ref"`
							AdditionalProperties *bool  `json:"additionalProperties"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			if json.Unmarshal(opRaw, &op) != nil {
				continue
			}
			s, ok := op.RequestBody.Content["application/json"]
			if !ok {
				continue
			}
			strict := s.Schema.AdditionalProperties
			if s.Schema.Ref != "" {
				strict = doc.Components.Schemas[strings.TrimPrefix(s.Schema.Ref, "#/components/schemas/")].AdditionalProperties
			}
			if strict == nil || *strict {
				continue
			}
			n++
			_, p := concrete(strings.ToUpper(method) + " " + path)
			st, b := e.do(strings.ToUpper(method), p, e.tokens[auth.RoleAdmin], `{"zz_unknown": 1}`)
			if st != http.StatusBadRequest || !strings.Contains(string(b), "zz_unknown") {
				t.Errorf("%s %s with an unknown field: %d %s, want 400 naming it", strings.ToUpper(method), path, st, b)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d strict request bodies checked", n)
	}
}
