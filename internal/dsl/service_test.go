package dsl

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/expr"
)

func TestEssenceMergeOrder(t *testing.T) {
	svc := &Service{Essences: map[string]map[string]any{
		"_default":  {"port": 6379, "conf": map[string]any{"a": 1, "b": 1, "list": []any{1, 2}}, "who": "default"},
		"prod":      {"conf": map[string]any{"b": 2}, "who": "prod"},
		"baremetal": {"conf": map[string]any{"c": 3}, "who": "baremetal", "hw": true},
		"redis-1":   {"conf": map[string]any{"list": []any{9}}, "who": "incarnation"},
		"staging":   {"who": "staging"},
	}}
	got := svc.Essence([]string{"prod", "baremetal", "unknown"}, "redis-1", map[string]any{"port": 7000})
	want := map[string]any{
		"port": 7000,
		"conf": map[string]any{"a": 1, "b": 2, "c": 3, "list": []any{9}},
		// covens sorted (baremetal, prod), then the incarnation's own file
		"who": "incarnation",
		"hw":  true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Essence (-want +got):\n%s", diff)
	}
	got["conf"].(map[string]any)["a"] = "mutated"
	if svc.Essences["_default"]["conf"].(map[string]any)["a"] != 1 {
		t.Error("the merged essence aliases _default")
	}
	// Covens in sorted order: prod after baremetal.
	if w := svc.Essence([]string{"prod", "baremetal"}, "", nil)["who"]; w != "prod" {
		t.Errorf("who = %v, want prod (covens merged in sorted order)", w)
	}
}

func TestValidateState(t *testing.T) {
	fsys := fstest.MapFS{
		"service.yml": {Data: []byte(`name: s
state_schema:
  type: object
  properties:
    banner: {type: string}
    replicas: {type: integer, minimum: 1}
  required: [banner]
`)},
	}
	svc, problems := LoadFS(fsys)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	tests := []struct {
		state   map[string]any
		wantErr string
	}{
		{map[string]any{"banner": "hi", "replicas": int64(2)}, ""},
		{map[string]any{"banner": "hi", "replicas": 2.0}, ""},
		{map[string]any{"replicas": 2}, "missing property 'banner'"},
		{map[string]any{"banner": 1}, "at '/banner': got number, want string"},
		{map[string]any{"banner": "x", "replicas": 0}, "at '/replicas': minimum: got 0, want 1"},
	}
	for _, tt := range tests {
		err := svc.ValidateState(tt.state)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidateState(%v): %v", tt.state, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ValidateState(%v) = %v, want it to contain %q", tt.state, err, tt.wantErr)
		case tt.wantErr != "" && domain.ErrorCode(err) != domain.CodeInvalid:
			t.Errorf("error code = %s, want invalid", domain.ErrorCode(err))
		}
	}
	if err := (&Service{}).ValidateState(map[string]any{"x": 1}); err != nil {
		t.Errorf("no schema: %v", err)
	}
}

func TestSerialWaves(t *testing.T) {
	hosts := []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7"}
	tests := []struct {
		name   string
		serial *Serial
		n      int
		want   int
		waves  [][]string
	}{
		{"no serial", nil, 7, 7, [][]string{hosts}},
		{"count", &Serial{Count: 2}, 7, 2, [][]string{{"h1", "h2"}, {"h3", "h4"}, {"h5", "h6"}, {"h7"}}},
		{"count larger than target", &Serial{Count: 10}, 7, 10, [][]string{hosts}},
		{"25 percent rounds up", &Serial{Percent: 25}, 7, 2, [][]string{{"h1", "h2"}, {"h3", "h4"}, {"h5", "h6"}, {"h7"}}},
		{"tiny percent is at least one", &Serial{Percent: 1}, 7, 1, nil},
		{"100 percent", &Serial{Percent: 100}, 7, 7, [][]string{hosts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.serial.WaveSize(tt.n); got != tt.want {
				t.Errorf("WaveSize(%d) = %d, want %d", tt.n, got, tt.want)
			}
			if tt.waves != nil {
				if diff := cmp.Diff(tt.waves, Waves(tt.serial, hosts)); diff != "" {
					t.Errorf("Waves (-want +got):\n%s", diff)
				}
			}
		})
	}
	if Waves(&Serial{Count: 1}, []string{}) != nil {
		t.Error("no hosts must give no waves")
	}
}

func TestProblemJSON(t *testing.T) {
	p := Problem{Pos: Pos{File: "scenario/s/main.yml", Line: 3, Col: 5}, Key: "serial", Message: "bad"}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"file":"scenario/s/main.yml","line":3,"col":5,"key":"serial","message":"bad"}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	var back Problem
	if err := json.Unmarshal(b, &back); err != nil || back != p {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	if got := (Problems{p}).Err(); domain.ErrorCode(got) != domain.CodeInvalid || !strings.Contains(got.Error(), "scenario/s/main.yml:3:5: bad") {
		t.Errorf("Problems.Err() = %v", got)
	}
	if (Problems{}).Err() != nil {
		t.Error("no problems must be no error")
	}
}

func TestLoopItems(t *testing.T) {
	ctx := context.Background()
	env := expr.ForKind(expr.KindScenario)
	act := &expr.Activation{Input: map[string]any{"peers": []any{"a", "b"}, "n": 2}}
	tests := []struct {
		name    string
		loop    any
		want    []any
		wantErr string
	}{
		{"no loop", nil, nil, ""},
		{"literal list rendered", []any{"${ input.n }", "x-${ input.n }"}, []any{int64(2), "x-2"}, ""},
		{"expression", "${ input.peers }", []any{"a", "b"}, ""},
		{"not a list", "${ input.n }", nil, "s.yml:3:5: loop: yielded integer 2, not a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &Task{Loop: tt.loop, Pos: Pos{File: "s.yml", Line: 3, Col: 5}}
			got, err := task.LoopItems(ctx, env, act)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
