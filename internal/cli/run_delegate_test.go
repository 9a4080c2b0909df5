package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestRunDetailShowsDelegates: `soulctl run show` says which delegate ran
// a delegated task for each wave host (SPEC §9 delegate:).
func TestRunDetailShowsDelegates(t *testing.T) {
	var rv runView
	rec := `{"apply_id": "r1", "status": "succeeded", "tasks": [{"name": "drain", "path": "0.0", "hosts": [
		{"sid": "web1", "wave": 1, "status": "changed", "changed": true, "data": {"delegated_to": ["lb1"]}},
		{"sid": "web2", "wave": 2, "status": "changed", "changed": true, "data": {"delegated_to": ["lb1", "lb2"]}},
		{"sid": "web3", "wave": 3, "status": "ok"}]}]}`
	if err := json.Unmarshal([]byte(rec), &rv); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := runDetail(&b, rv); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"web1 → lb1\t", "web2 → lb1,lb2\t", "\tweb3\t"} {
		if !strings.Contains(out, want) {
			t.Errorf("run show lacks %q:\n%s", want, out)
		}
	}
}
