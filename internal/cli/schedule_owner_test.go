package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// TestM4ScheduleListShowsOwnerAndPause: audit M4 — an operator's schedule
// records her as its owner; once an admin disables her, `schedule list`
// shows it paused (table and JSON).
func TestM4ScheduleListShowsOwnerAndPause(t *testing.T) {
	k := startKeeper(t)
	out := k.ctl(t, "archon", "create", "olga", "--role", "operator", "-o", "json").must(t)
	var olga apitypes.CreatedArchon
	if err := json.Unmarshal([]byte(out.Stdout), &olga); err != nil {
		t.Fatal(err)
	}
	as := func(args ...string) ctlResult {
		return ctl(t, nil, "", append([]string{"--keeper", k.URL, "--token", olga.Token.Token}, args...)...)
	}
	proc := filepath.Join(t.TempDir(), "beacon.yaml")
	if err := os.WriteFile(proc, []byte("steps:\n  look:\n    action:\n      apicall: souls list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	as("checker", "procedure", "create", "beacon", "--file", proc).must(t)
	as("checker", "procedure", "schedule", "add", "--name", "beacon", "--cron", "@hourly").must(t)
	if r := k.ctl(t, "checker", "procedure", "schedule", "list").must(t); !strings.Contains(r.Stdout, "OWNER") || !strings.Contains(r.Stdout, "olga") || !strings.Contains(r.Stdout, "active") {
		t.Fatalf("schedule list before the disable:\n%s", r.Stdout)
	}
	k.ctl(t, "archon", "disable", "olga").must(t)
	r := k.ctl(t, "checker", "procedure", "schedule", "list", "-o", "json").must(t)
	var ss []apitypes.Schedule
	if err := json.Unmarshal([]byte(r.Stdout), &ss); err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].OwnerID != olga.Archon.ID || ss[0].Owner != "olga" || !ss[0].Paused {
		t.Fatalf("schedule list -o json after the disable: %s", r.Stdout)
	}
	if r := k.ctl(t, "checker", "procedure", "schedule", "list").must(t); !strings.Contains(r.Stdout, "paused: its owner, archon olga, is disabled") {
		t.Errorf("schedule list after the disable:\n%s", r.Stdout)
	}
}
