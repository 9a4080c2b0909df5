package checker

import (
	"encoding/json"
	"testing"
)

// TestRedisRestartProcedureCommands: the heal action of
// examples/procedures/redis_restart_if_critical.yaml renders the CRITICAL
// hosts into the scenario input as a JSON list the heal scenario's list
// input takes.
func TestRedisRestartProcedureCommands(t *testing.T) {
	p, err := ParseProcedure("redis_restart_if_critical", []byte(readExample(t, "redis_restart_if_critical.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	var heal []string
	for _, s := range p.Steps {
		if s.Name == "heal-if-it-stays-critical" {
			heal, err = s.Action.Calls.Commands[0].Argv(map[string]any{"incarnation": "redis-e2e", "critical": []any{"h-2", "h-3"}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(heal) != 9 || heal[7] == "" {
		t.Fatalf("heal argv: %q", heal)
	}
	var input struct{ Hosts []string }
	if err := json.Unmarshal([]byte(heal[7]), &input); err != nil || len(input.Hosts) != 2 || input.Hosts[1] != "h-3" {
		t.Errorf("--input %q: %+v %v", heal[7], input, err)
	}
}
