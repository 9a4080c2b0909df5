package module

import (
	"strings"
	"testing"
)

func TestValidateParams(t *testing.T) {
	s := Schema{
		Params: map[string]Param{
			"command": {Type: TypeString},
			"cmd":     {Type: TypeString},
			"args":    {Type: TypeStrList},
			"env":     {Type: TypeMap},
			"count":   {Type: TypeInt},
			"ratio":   {Type: TypeNumber},
			"on":      {Type: TypeBool},
			"path":    {Type: TypeString, Required: true},
			"list":    {Type: TypeList},
			"any":     {Type: TypeAny},
		},
		ExactlyOne: [][]string{{"command", "cmd"}},
		AtLeastOne: [][]string{{"count", "ratio"}},
	}
	tests := []struct {
		name   string
		params map[string]any
		want   string // substring of the error; "" = valid
	}{
		{"valid", map[string]any{"path": "/x", "cmd": "ls", "args": []any{"-l"}, "env": map[string]any{"A": 1}, "count": 2, "list": []any{1, "a"}, "any": nil}, ""},
		{"json numbers", map[string]any{"path": "/x", "command": "ls", "count": float64(3), "ratio": 0.5}, ""},
		{"string slice", map[string]any{"path": "/x", "command": "ls", "args": []string{"a"}, "count": int64(1)}, ""},
		{"nil counts as absent", map[string]any{"path": "/x", "command": "ls", "cmd": nil, "count": 1}, ""},
		{"unknown", map[string]any{"path": "/x", "command": "ls", "count": 1, "comand": "x"}, `unknown param "comand" (accepted: any, args,`},
		{"missing required", map[string]any{"command": "ls", "count": 1}, `missing required param "path"`},
		{"exactly one: two", map[string]any{"path": "/x", "command": "ls", "cmd": "ls", "count": 1}, "exactly one of command, cmd must be given, got 2"},
		{"exactly one: none", map[string]any{"path": "/x", "count": 1}, "exactly one of command, cmd must be given, got 0"},
		{"at least one", map[string]any{"path": "/x", "cmd": "ls"}, "at least one of count, ratio"},
		{"wrong string", map[string]any{"path": 1, "cmd": "ls", "count": 1}, `param "path" must be string, got the number 1`},
		{"fractional int", map[string]any{"path": "/x", "cmd": "ls", "count": 1.5}, `param "count" must be integer`},
		{"list of non-strings", map[string]any{"path": "/x", "cmd": "ls", "count": 1, "args": []any{1}}, `param "args" must be list[string], got a list`},
		{"map with int keys", map[string]any{"path": "/x", "cmd": "ls", "count": 1, "env": map[int]any{1: 1}}, `param "env" must be map`},
		{"bool", map[string]any{"path": "/x", "cmd": "ls", "count": 1, "on": "yes"}, `param "on" must be boolean, got a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateParams(s, tt.params)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
