package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunDetailShowsNoHostNote: `soulctl run show` lists a step that
// targeted no host and says why (SPEC §6).
func TestRunDetailShowsNoHostNote(t *testing.T) {
	var b bytes.Buffer
	err := runDetail(&b, runView{ApplyID: "r1", Status: "succeeded", Tasks: []taskView{
		{Name: "everyone", Path: "0", Hosts: []hostView{{SID: "a", Wave: 1, Status: "ok"}}},
		{Name: "db only", Path: "1", Hosts: []hostView{}, Note: "on: [db] matched no member of this incarnation"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"no host", "db only: on: [db] matched no member of this incarnation"} {
		if !strings.Contains(out, want) {
			t.Errorf("run show lacks %q:\n%s", want, out)
		}
	}
}
