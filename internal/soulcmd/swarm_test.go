package soulcmd

import (
	"strings"
	"testing"
)

// Each swarm soul gets its own source address from --source-net, the
// network address skipped; a prefix too small for --count is refused.
func TestSwarmSources(t *testing.T) {
	got, err := swarmSources("127.1.0.0/16", 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 300 || got[0].String() != "127.1.0.1" || got[255].String() != "127.1.1.0" || got[299].String() != "127.1.1.44" {
		t.Fatalf("sources: %d, first %s, 256th %s, last %s", len(got), got[0], got[255], got[299])
	}
	seen := map[string]bool{}
	for _, a := range got {
		if seen[a.String()] {
			t.Fatalf("%s given twice", a)
		}
		seen[a.String()] = true
	}
	if got, err := swarmSources("", 5); got != nil || err != nil {
		t.Fatalf("no --source-net: %v, %v", got, err)
	}
	if _, err := swarmSources("127.2.0.0/24", 300); err == nil || !strings.Contains(err.Error(), "fewer than --count 300") {
		t.Fatalf("a /24 for 300 souls: %v", err)
	}
	if _, err := swarmSources("not-a-prefix", 1); err == nil {
		t.Fatal("a bad prefix was accepted")
	}
}
