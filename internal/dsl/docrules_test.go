package dsl

import (
	"os"
	"strings"
	"testing"
)

// TestDocsStateTheRules: docs/dsl.md states the rules issue 35 settled, so
// a change of behaviour has a page to update.
func TestDocsStateTheRules(t *testing.T) {
	b, err := os.ReadFile("../../docs/dsl.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		"first by SID in byte order",
		"of `x-2`, `x-9` and `x-10` it picks `x-10`",
		"`runs.max_loop_items`",
		"did not answer: it is not counted by\n`size(register.x)`",
		"`essence.*` is closed",
		"checked against\nthe `type` that `service.yml`'s `state_schema` declares",
		"`register.<name>.output` is a destiny's `output:`",
		"checked against the type of\n`_default.yaml`'s value",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/dsl.md does not say %q", want)
		}
	}
}
