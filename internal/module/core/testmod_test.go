package core

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

func TestTestModules(t *testing.T) {
	tests := []struct {
		name    string
		module  string
		params  map[string]any
		stdout  string
		failed  bool
		msg     string
		message any // data.message, for echo
	}{
		{"ping", "core.test.ping", map[string]any{}, "pong", false, "pong", nil},
		{"echo string", "core.test.echo", map[string]any{"message": "hello"}, "hello", false, "", "hello"},
		{"echo map", "core.test.echo", map[string]any{"message": map[string]any{"a": 1}}, `{"a":1}`, false, "", map[string]any{"a": 1}},
		{"sleep", "core.test.sleep", map[string]any{"duration": "10ms"}, "", false, "slept 10ms", nil},
		{"sleep seconds", "core.test.sleep", map[string]any{"duration": 0.01}, "", false, "slept 10ms", nil},
		{"fail", "core.test.fail", map[string]any{"message": "boom"}, "", true, "boom", nil},
		{"fail default", "core.test.fail", map[string]any{}, "", true, "failed as requested", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, tt.module, tt.params, &module.Env{Check: tt.module != "core.test.fail"})
			if res.Changed || res.Failed != tt.failed || res.Stdout != tt.stdout || !strings.Contains(res.Msg, tt.msg) {
				t.Errorf("result %+v", res)
			}
			if diff := cmp.Diff(tt.message, res.Data["message"]); diff != "" {
				t.Errorf("data.message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTestSleepHonoursContext(t *testing.T) {
	m, _ := module.Lookup("core.test.sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := m.Apply(ctx, map[string]any{"duration": "1m"}, &module.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || !strings.Contains(res.Msg, "interrupted") || time.Since(start) > 5*time.Second {
		t.Errorf("result %+v after %v", res, time.Since(start))
	}
	_, err = runErr(t, "core.test.sleep", map[string]any{"duration": "soon"}, nil)
	wantErrContains(t, err, `"soon" is not a duration`)
}
