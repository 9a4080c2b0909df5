package core

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

// TestTemplateSprig: the hermetic Sprig functions a ported role reaches for
// render as expected; missingkey=error stays, with hasKey/get|default for
// "is defined"; integers render as integers.
func TestTemplateSprig(t *testing.T) {
	files := fstest.MapFS{
		"t.tmpl": {Data: []byte(strings.Join([]string{
			`{{ if hasKey .vars "port" }}port {{ .vars.port }}{{ end }}`,
			`{{ if not (hasKey .vars "bind") }}no bind{{ end }}`,
			`bind {{ get .vars "bind" | default "0.0.0.0" }}`,
			`user {{ .vars.user | default "redis" }}`,
			`mem {{ .vars.mem }} {{ add .vars.mem 1 }}`,
			`hosts {{ .vars.hosts | sortAlpha | join "," }}`,
			`split {{ (split ":" "a:b")._1 }}`,
			`re {{ regexReplaceAll "[0-9]+" "v12.3" "N" }}`,
			`semver {{ semverCompare ">=1.2.0" "1.10.0" }}`,
			`block:{{ "a: 1\nb: 2" | nindent 2 }}`,
			`upper {{ upper "x" }} {{ "y" | quote }} {{ trimSuffix ".conf" "a.conf" }}`,
			`dict {{ toJson (dict "b" 2 "a" 1) }}`,
			`seq {{ seq 3 }} {{ until 3 }}`,
		}, "\n") + "\n")},
		"missing.tmpl": {Data: []byte(`{{ .vars.nope | default "x" }}`)},
		"env.tmpl":     {Data: []byte(`{{ env "HOME" }}`)},
		"expand.tmpl":  {Data: []byte(`{{ expandenv "$HOME" }}`)},
		"rand.tmpl":    {Data: []byte(`{{ htpasswd "u" "p" }}`)},
	}
	env := &module.Env{Files: files, TemplateData: map[string]any{"vars": map[string]any{
		"port": int64(6379), "user": "", "mem": int64(600100000), "hosts": []any{"c", "a", "b"},
	}}}
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	run(t, "core.file.rendered", map[string]any{"path": p, "template": "t.tmpl"}, env)
	want := strings.Join([]string{
		"port 6379", "no bind", "bind 0.0.0.0", "user redis", "mem 600100000 600100001",
		"hosts a,b,c", "split b", "re vN.N", "semver true", "block:\n  a: 1\n  b: 2",
		`upper X "y" a`, `dict {"a":1,"b":2}`, "seq 1 2 3 [0 1 2]",
	}, "\n") + "\n"
	if d := cmp.Diff(want, readFile(t, p)); d != "" {
		t.Errorf("rendered (-want +got):\n%s", d)
	}
	for name, msg := range map[string]string{
		"missing.tmpl": "nope",
		"env.tmpl":     `function "env" not defined`,
		"expand.tmpl":  `function "expandenv" not defined`,
		"rand.tmpl":    `function "htpasswd" not defined`,
	} {
		_, err := runErr(t, "core.file.rendered", map[string]any{"path": filepath.Join(dir, name), "template": name}, env)
		wantErrContains(t, err, msg)
	}
}

// TestTemplateSprigBounds: sprig's functions whose result size an argument
// controls are bounded like indent/join (audit L4).
func TestTemplateSprigBounds(t *testing.T) {
	files := fstest.MapFS{
		"repeat.tmpl":  {Data: []byte(`{{ repeat 300000000 "xy" | len }}`)},
		"nindent.tmpl": {Data: []byte(`{{ nindent 300000000 "x" | len }}`)},
		"until.tmpl":   {Data: []byte(`{{ until 300000000 | len }}`)},
		"ustep.tmpl":   {Data: []byte(`{{ untilStep -2000000000 2000000000 1 | len }}`)},
		"seq.tmpl":     {Data: []byte(`{{ seq 0 1 300000000 | len }}`)},
		"wrap.tmpl":    {Data: []byte(`{{ wrapWith 1 .vars.sep .vars.sep | len }}`)},
		"json.tmpl":    {Data: []byte(`{{ toPrettyJson .vars | len }}`)},
	}
	big := strings.Repeat("s", 20_000)
	list := make([]any, 20_000)
	for i := range list {
		list[i] = big
	}
	env := &module.Env{Files: files, TemplateData: map[string]any{"vars": map[string]any{"sep": big, "list": list}}}
	dir := t.TempDir()
	for name := range files {
		_, err := runErr(t, "core.file.rendered", map[string]any{"path": filepath.Join(dir, name), "template": name}, env)
		if err == nil || !(strings.Contains(err.Error(), "MiB") || strings.Contains(err.Error(), "limit of a template")) {
			t.Errorf("%s: err = %v, want the size limit", name, err)
		}
	}
	if got, err := untilStep(5, 0, -2); err != nil || !cmp.Equal(got, []int{5, 3, 1}) {
		t.Errorf("untilStep 5 0 -2 = %v, %v", got, err)
	}
	if got, _ := untilStep(0, 5, -1); len(got) != 0 {
		t.Errorf("untilStep away from stop = %v", got)
	}
}
