package stateschema

import (
	"strings"
	"testing"
)

func TestCompileAndValidate(t *testing.T) {
	validate, _, _, err := Compile(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"version": map[string]any{"type": "string"}, "count": map[string]any{"type": "integer"}},
		"additionalProperties": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(map[string]any{"version": "7.0", "count": int64(3)}); err != nil {
		t.Errorf("valid state refused: %v", err)
	}
	err = validate(map[string]any{"version": 7})
	if err == nil || !strings.Contains(err.Error(), "/version") {
		t.Errorf("a number for a string: %v, want an error naming /version", err)
	}
	if err := validate(map[string]any{"extra": true}); err == nil {
		t.Error("an undeclared key was accepted under additionalProperties: false")
	}
}

func TestCompileNamesTheBadPlace(t *testing.T) {
	_, msg, loc, err := Compile(map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "strin"}}})
	if err == nil {
		t.Fatal("an invalid schema compiled")
	}
	if msg == "" || strings.Join(loc, "/") != "properties/v/type" {
		t.Errorf("msg %q at %v, want a message at properties/v/type", msg, loc)
	}
}
