package jinja_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/executor"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules the destiny calls
	"github.com/soulstack/soulstack/internal/soul"
)

// TestRolesRenderAsAnsible renders the templates of real Ansible roles
// (geerlingguy.nginx, geerlingguy.redis, dev-sec os_hardening; see
// testdata/roles/README.md) the way a user who moved them would: copied
// unchanged into a destiny's templates/, the role's variables as the
// destiny's vars_files, one core.file.rendered task per template, run by
// the soul's executor as `soul apply --local --root` runs it. Each file it
// writes must be byte for byte what Ansible's template module wrote for
// the same variables (testdata/roles/*/golden, made by regen.sh); a second
// run must change nothing.
func TestRolesRenderAsAnsible(t *testing.T) {
	cases, err := filepath.Glob("testdata/roles/*/cases/*.yml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases found: %v", err)
	}
	for _, cf := range cases {
		role := filepath.Base(filepath.Dir(filepath.Dir(cf)))
		name := strings.TrimSuffix(filepath.Base(cf), ".yml")
		t.Run(role+"/"+name, func(t *testing.T) {
			var c struct {
				Templates []string `yaml:"templates"`
			}
			readYAML(t, cf, &c)
			golden := filepath.Join("testdata/roles", role, "golden", name)
			dir := destiny(t, filepath.Join("testdata/roles", role, "templates"), filepath.Join(golden, "vars.json"), c.Templates)
			root := t.TempDir()

			res := applyLocal(t, dir, root)
			if len(res.Tasks) != len(c.Templates) {
				t.Fatalf("first run: %d task results for %d templates: %s", len(res.Tasks), len(c.Templates), res.Msg)
			}
			for i, tpl := range c.Templates {
				tr := res.Tasks[i]
				if tr.Result.Failed || !tr.Result.Changed {
					t.Fatalf("%s: first run: failed=%v changed=%v: %s", tpl, tr.Result.Failed, tr.Result.Changed, tr.Result.Msg)
				}
				want, err := os.ReadFile(filepath.Join(golden, outName(tpl)))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(root, "out", outName(tpl)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s renders differently from Ansible:\n%s", tpl, lineDiff(string(want), string(got)))
				}
			}
			again := applyLocal(t, dir, root)
			for i, tpl := range c.Templates {
				if r := again.Tasks[i].Result; r.Changed || r.Failed {
					t.Errorf("%s: second run changed=%v failed=%v (%s), want unchanged", tpl, r.Changed, r.Failed, r.Msg)
				}
			}
		})
	}
}

// destiny writes a destiny rendering each template to /out/<outName> with
// the variables of varsFile, and returns its directory.
func destiny(t *testing.T, templates, varsFile string, tpls []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "roles")
	if err := os.CopyFS(filepath.Join(dir, "templates"), os.DirFS(templates)); err != nil {
		t.Fatal(err)
	}
	vars, err := os.ReadFile(varsFile)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "vars", "role.yml"), vars)
	var b strings.Builder
	b.WriteString("input: {}\nvars_files: [vars/role.yml]\ntasks:\n")
	for _, tpl := range tpls {
		fmt.Fprintf(&b, "  - name: %s\n    module: core.file.rendered\n    params:\n      path: /out/%s\n      template: templates/%s\n      mode: \"0644\"\n      makedirs: true\n", tpl, outName(tpl), tpl)
	}
	write(t, filepath.Join(dir, "main.yml"), []byte(b.String()))
	return dir
}

// applyLocal runs the destiny at dir confined to root, as `soul apply
// --local --root` does.
func applyLocal(t *testing.T, dir, root string) domain.Result {
	t.Helper()
	files, err := executor.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := soul.CollectFacts(soul.FactsOptions{SID: "golden", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	runner := &soul.ModuleRunner{Root: root, Facts: func() map[string]any { return facts }}
	res := executor.RunBundle(context.Background(), &dispatch.Bundle{Destiny: "roles", Files: files}, facts,
		executor.Options{Call: executor.CallerFor(runner)})
	if res.Failed && len(res.Tasks) == 0 {
		t.Fatalf("the destiny failed before any task: %s", res.Msg)
	}
	return res
}

// outName is the golden file of template tpl: its path without .j2, with
// '/' as "__" (as regen.sh names it).
func outName(tpl string) string {
	return strings.ReplaceAll(strings.TrimSuffix(tpl, ".j2"), "/", "__")
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineDiff shows the first lines where want and got differ, quoted so
// that whitespace shows.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || (i >= len(w)) != (i >= len(g)) {
			out = append(out, fmt.Sprintf("line %d:\n  ansible: %q\n  ours:    %q", i+1, wl, gl))
		}
		if len(out) == 8 {
			out = append(out, "…")
			break
		}
	}
	if len(out) == 0 {
		b, _ := json.Marshal([]int{len(want), len(got)})
		return "same lines, different bytes " + string(b)
	}
	return strings.Join(out, "\n")
}
