package executor_test

import (
	"strings"
	"testing"
)

// TestDestinyVarsFiles: a destiny's vars_files resolve on the host from the
// bundle's own files (first found for its facts), task vars_files over
// them; a host with no matching alternative fails the bundle naming the
// entry and the paths tried.
func TestDestinyVarsFiles(t *testing.T) {
	h := newHost(t)
	files := map[string][]byte{
		"main.yml": []byte(`vars_files:
  - ["vars/${ soulprint.self.os.family }.yml", vars/default.yml]
tasks:
  - name: a
    module: core.test.echo
    params: {message: "${ vars.pkg }"}
  - name: b
    module: core.test.echo
    vars_files: [extra.yml]
    params: {message: "${ vars.pkg }"}
`),
		"vars/debian.yml":  []byte("pkg: apt\n"),
		"vars/default.yml": []byte("pkg: other\n"),
		"extra.yml":        []byte("pkg: extra\n"),
	}
	r := h.runFiles(t, files, nil, false)
	if r.Failed || r.Tasks[0].Stdout != "apt" || r.Tasks[1].Stdout != "extra" {
		t.Fatalf("%+v", r)
	}
	h.facts["os"] = map[string]any{"family": "redhat"}
	if r := h.runFiles(t, files, nil, false); r.Failed || r.Tasks[0].Stdout != "other" {
		t.Fatalf("fallback: %+v", r)
	}
	files["main.yml"] = []byte("vars_files:\n  - [\"vars/${ soulprint.self.os.family }.yml\"]\ntasks:\n  - {name: a, module: core.test.echo, params: {message: \"${ vars.pkg }\"}}\n")
	r = h.runFiles(t, files, nil, false)
	if !r.Failed || len(r.Tasks) != 0 || !strings.Contains(r.Msg, "vars_files (destiny/t/main.yml:2:5): none of vars/redhat.yml exists for this host") {
		t.Fatalf("no alternative: %+v", r)
	}
}
