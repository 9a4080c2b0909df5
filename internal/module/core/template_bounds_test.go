package core

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

// TestL4TemplateBounds reproduces the audit's L4 finding: a template could
// allocate without limit ({{ indent 300000000 "x" | len }} took the Keeper
// from 45 to 631 MB). Rendering is now bounded (16 MiB) and the helpers
// refuse a result over the bound before building it.
func TestL4TemplateBounds(t *testing.T) {
	files := fstest.MapFS{
		"indent.tmpl": {Data: []byte(`{{ indent 300000000 "x" | len }}`)},
		"join.tmpl":   {Data: []byte(`{{ join .vars.sep .vars.list | len }}`)},
		"loop.tmpl":   {Data: []byte(`{{ range .vars.list }}{{ $.vars.sep }}{{ end }}`)},
		"ok.tmpl":     {Data: []byte(`{{ indent 4 "a\nb" }}`)},
	}
	list := make([]any, 5000)
	for i := range list {
		list[i] = "x"
	}
	env := &module.Env{Files: files, TemplateData: map[string]any{"vars": map[string]any{
		"sep": strings.Repeat("s", 10_000), "list": list,
	}}}
	dir := t.TempDir()
	for _, name := range []string{"indent.tmpl", "join.tmpl", "loop.tmpl"} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := runErr(t, "core.file.rendered", map[string]any{"path": filepath.Join(dir, name), "template": name}, env)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "MiB") {
				t.Fatalf("rendering %s: err = %v, want the size limit", name, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
				t.Errorf("allocated %d MB before refusing", alloc>>20)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	res := run(t, "core.file.rendered", map[string]any{"path": filepath.Join(dir, "ok"), "template": "ok.tmpl"}, env)
	if res.Failed {
		t.Fatalf("a small template failed: %s", res.Msg)
	}
	if got := readFile(t, filepath.Join(dir, "ok")); got != "    a\n    b" {
		t.Errorf("indent rendered %q", got)
	}
}
