package engine

import (
	"testing"

	"github.com/soulstack/soulstack/internal/dsl"
)

// TestReadsFacts: a scenario reads facts when a file of it names
// soulprint or delegated_for, or holds a template using its whole data
// (which carries soulprint.self); other templates and files do not.
func TestReadsFacts(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want bool
	}{
		{"no expressions", "tasks:\n  - {name: p, module: core.test.ping}\n", false},
		{"other roots", `line: "${ run.id } ${ input.x } ${ incarnation.members.size() }"`, false},
		{"soulprint.self", `when: soulprint.self.os.family == "debian"`, true},
		{"soulprint.where", `x: "${ soulprint.where(\"'web' in self.covens\") }"`, true},
		{"soulprint in a comment", "# soulprint.self is not read here\n", true},
		{"delegated_for whole", `line: "${ to_json(delegated_for) }"`, true},
		{"template fields", "port={{ .vars.port }} {{ .input.name | upper }}\n", false},
		{"docker format in a command", `cmd: "docker ps --format '{{.Names}}'"`, false},
		{"template soulprint", "{{ .soulprint.self.os.family }}\n", true},
		{"template dot", "{{ . }}\n", true},
		{"template root", "{{ toJson $ }}\n", true},
		{"template passes its data", `{{ define "t" }}{{ .vars.x }}{{ end }}{{ template "t" . }}`, true},
		{"template range dot", "{{ range .vars.list }}{{ . }}{{ end }}\n", true},
		{"template in a define", `{{ define "t" }}{{ . }}{{ end }}x`, true},
		{"template parse error", "{{ .vars.x \n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &dsl.Scenario{Files: map[string][]byte{"main.yml": []byte("tasks: []\n"), "f": []byte(tc.file)}}
			if got := readsFacts(sc); got != tc.want {
				t.Errorf("readsFacts(%q) = %v, want %v", tc.file, got, tc.want)
			}
		})
	}
}
