package core

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

func jinjaEnv() *module.Env {
	files := fstest.MapFS{
		"templates/nginx.conf.j2": {Data: []byte(`# {{ ansible_managed }}
user {{ nginx_user }};
worker_processes {{ nginx_worker_processes }};
{% for u in upstreams %}
upstream {{ u.name }} { server {{ u.host }}:{{ u.port | default(80) }}; }
{% endfor %}
{% include 'partial.j2' %}
host {{ inventory_hostname }} {{ ansible_hostname }} {{ soulprint.self.os.family }} {{ essence.tier }} {{ input.size }}
`)},
		"templates/partial.j2":   {Data: []byte("# partial {{ vars.nginx_user | upper }}\n")},
		"templates/go.tmpl":      {Data: []byte("go {{ .nginx_user }}\n")},
		"templates/go.j2":        {Data: []byte("jinja {{ nginx_user }}\n")},
		"templates/undef.j2":     {Data: []byte("line 1\nline 2 {{ nope }}\n")},
		"templates/broken.j2":    {Data: []byte("a\n{% if x %}\nb\n")},
		"templates/header.j2":    {Data: []byte("#jinja2: trim_blocks: False, lstrip_blocks: True\n  {% if true %}\nx\n  {% endif %}\n")},
		"templates/lstrip.j2":    {Data: []byte("  {% if true %}\nx\n  {% endif %}\n")},
		"templates/lines.j2":     {Data: []byte("a\nb\n")},
		"templates/bigloop.j2":   {Data: []byte("{% for i in list %}{{ sep }}{% endfor %}")},
		"templates/bigindent.j2": {Data: []byte("{{ 'x' | indent(300000000) | length }}")},
		"templates/bigjoin.j2":   {Data: []byte("{{ list | join(sep) | length }}")},
		"templates/bigwrap.j2":   {Data: []byte("{{ sep | wordwrap(1, wrapstring=sep) | length }}")},
		"templates/bigrange.j2":  {Data: []byte("{% for i in range(1000000000) %}{% endfor %}")},
	}
	return &module.Env{Files: files, TemplateData: map[string]any{
		"nginx_user": "www-data",
		"vars":       map[string]any{"nginx_user": "www-data"},
		"upstreams":  []any{map[string]any{"name": "app", "host": "10.0.0.1", "port": int64(8080)}, map[string]any{"name": "web", "host": "10.0.0.2"}},
		"essence":    map[string]any{"tier": "prod"},
		"input":      map[string]any{"size": int64(3)},
		"soulprint":  map[string]any{"self": map[string]any{"sid": "web1.example.org", "hostname": "web1", "os": map[string]any{"family": "debian"}}},
	}}
}

func TestFileRenderedJinja(t *testing.T) {
	env := jinjaEnv()
	p := filepath.Join(t.TempDir(), "nginx.conf")
	params := map[string]any{"path": p, "template": "templates/nginx.conf.j2", "vars": map[string]any{"nginx_worker_processes": "auto"}}
	res := run(t, "core.file.rendered", params, env)
	wantChanged(t, res, true)
	// trim_blocks eats the newline after the include tag and the included
	// template loses its own trailing newline, as Ansible renders it.
	want := `# Soul Stack managed
user www-data;
worker_processes auto;
upstream app { server 10.0.0.1:8080; }
upstream web { server 10.0.0.2:80; }
# partial WWW-DATAhost web1.example.org web1 debian prod 3
`
	if diff := cmp.Diff(want, readFile(t, p)); diff != "" {
		t.Fatalf("rendered (-want +got):\n%s", diff)
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.rendered", params, env), false)
	before.untouched(t, p)

	checkEnv := *env
	checkEnv.Check = true
	res = run(t, "core.file.rendered", map[string]any{"path": p, "template": "templates/nginx.conf.j2", "vars": map[string]any{"nginx_worker_processes": 4, "ansible_managed": "managed by ops"}}, &checkEnv)
	wantChanged(t, res, true)
	for _, part := range []string{"-# Soul Stack managed\n+# managed by ops\n", "-worker_processes auto;\n+worker_processes 4;\n"} {
		if !strings.Contains(res.Diff, part) {
			t.Errorf("check-mode diff %q lacks %q", res.Diff, part)
		}
	}
	before.untouched(t, p)
	res = run(t, "core.file.rendered", params, &checkEnv)
	wantChanged(t, res, false)
}

func TestFileRenderedEngineChoice(t *testing.T) {
	env := jinjaEnv()
	dir := t.TempDir()
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"suffix .j2 is jinja", map[string]any{"template": "templates/go.j2"}, "jinja www-data\n"},
		{"other suffix is go", map[string]any{"template": "templates/go.tmpl"}, "go www-data\n"},
		{"engine go over .j2", map[string]any{"template": "templates/go.tmpl", "engine": "go"}, "go www-data\n"},
		{"engine jinja over suffix", map[string]any{"template": "templates/go.j2", "engine": "jinja"}, "jinja www-data\n"},
		{"header overrides", map[string]any{"template": "templates/header.j2"}, "\nx\n"},
		{"newline_sequence", map[string]any{"template": "templates/lines.j2", "newline_sequence": `\r\n`}, "a\r\nb\r\n"},
		{"header wins over params", map[string]any{"template": "templates/header.j2", "lstrip_blocks": false, "trim_blocks": true}, "\nx\n"},
		{"lstrip_blocks and trim_blocks params", map[string]any{"template": "templates/lstrip.j2", "lstrip_blocks": true, "trim_blocks": false}, "\nx\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.Repeat("f", i+1))
			tt.params["path"] = p
			wantChanged(t, run(t, "core.file.rendered", tt.params, env), true)
			if diff := cmp.Diff(tt.want, readFile(t, p)); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
			wantChanged(t, run(t, "core.file.rendered", tt.params, env), false)
		})
	}
}

func TestFileRenderedJinjaErrors(t *testing.T) {
	env := jinjaEnv()
	p := filepath.Join(t.TempDir(), "out")
	tests := []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"undefined variable", map[string]any{"template": "templates/undef.j2"}, []string{"templates/undef.j2:2:", "nope"}},
		{"syntax error", map[string]any{"template": "templates/broken.j2"}, []string{"templates/broken.j2:3:", "syntax error", "endif"}},
		{"jinja setting with go engine", map[string]any{"template": "templates/go.tmpl", "trim_blocks": false}, []string{"trim_blocks is a Jinja setting", "engine: jinja"}},
		{"bad engine", map[string]any{"template": "templates/go.j2", "engine": "mako"}, []string{`engine "mako"`}},
		{"bad newline", map[string]any{"template": "templates/go.j2", "newline_sequence": "x"}, []string{"newline_sequence"}},
		{"missing template", map[string]any{"template": "templates/none.j2"}, []string{"templates/none.j2 not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params["path"] = p
			_, err := runErr(t, "core.file.rendered", tt.params, env)
			wantErrContains(t, err, tt.want...)
		})
	}
}

// TestJinjaTemplateBounds is TestL4TemplateBounds for the Jinja engine:
// loops and the filters that grow their output are refused past the
// 16 MiB bound, before they allocate it.
func TestJinjaTemplateBounds(t *testing.T) {
	env := jinjaEnv()
	list := make([]any, 5000)
	for i := range list {
		list[i] = "x"
	}
	env.TemplateData["list"] = list
	env.TemplateData["sep"] = strings.Repeat("s", 10_000)
	dir := t.TempDir()
	for _, name := range []string{"bigloop.j2", "bigindent.j2", "bigjoin.j2", "bigwrap.j2", "bigrange.j2"} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := runErr(t, "core.file.rendered", map[string]any{"path": filepath.Join(dir, name), "template": "templates/" + name}, env)
			runtime.ReadMemStats(&after)
			wantErrContains(t, err, "limit")
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
				t.Errorf("allocated %d MB before refusing", alloc>>20)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}
