package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/editorschema"
)

// TestScenarioSchemaWritesModelines: soulctl scenario schema writes the
// schemas into the repository and a modeline into each file that has one,
// the relative paths resolve from each file, the repository still
// validates, and a second run changes nothing.
func TestScenarioSchemaWritesModelines(t *testing.T) {
	dir := writeRepo(t, map[string]string{
		"service.yml":               "# the demo\nname: demo\n",
		"essence/_default.yaml":     "port: 8080\n",
		"scenario/s/main.yml":       "tasks:\n  - include: steps.yml\n",
		"scenario/s/steps.yml":      "- module: core.test.ping\n",
		"scenario/s/vars.yml":       "a: 1\n",
		"destiny/d/main.yml":        "tasks:\n  - module: core.test.ping\n",
		"health/h.yml":              "module: core.test.ping\n",
		"scenario/s/defaults.yml":   "a: 1\n",
		"scenario/s/templates/a.j2": "x\n",
	})
	code, out, errOut := runSoulctl(t, "scenario", "schema", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	want := map[string]string{
		"service.yml":           "# yaml-language-server: $schema=.soulstack/schemas/service.schema.json\n# the demo\n",
		"essence/_default.yaml": "# yaml-language-server: $schema=../.soulstack/schemas/essence.schema.json\n",
		"scenario/s/main.yml":   "# yaml-language-server: $schema=../../.soulstack/schemas/scenario.schema.json\n",
		"scenario/s/steps.yml":  "# yaml-language-server: $schema=../../.soulstack/schemas/tasks.schema.json\n",
		"destiny/d/main.yml":    "# yaml-language-server: $schema=../../.soulstack/schemas/destiny.schema.json\n",
		"health/h.yml":          "# yaml-language-server: $schema=../.soulstack/schemas/health.schema.json\n",
	}
	for f, prefix := range want {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), prefix) {
			t.Errorf("%s starts %q, want %q", f, b, prefix)
		}
		url := strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], editorschema.ModelinePrefix)
		if _, err := os.Stat(filepath.Join(dir, filepath.Dir(f), url)); err != nil {
			t.Errorf("the modeline of %s does not resolve: %v", f, err)
		}
	}
	for _, f := range []string{"scenario/s/vars.yml", "scenario/s/defaults.yml"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); strings.Contains(string(b), "yaml-language-server") {
			t.Errorf("%s got a modeline: %q", f, b)
		}
	}
	if !strings.Contains(out, "6 modelines set") {
		t.Errorf("output:\n%s", out)
	}
	if _, ps := dsl.Load(dir); len(ps) > 0 {
		t.Fatalf("the repository no longer validates: %v", ps)
	}
	code, out, _ = runSoulctl(t, "scenario", "schema", dir)
	if code != 0 || !strings.Contains(out, "0 modelines set") {
		t.Errorf("second run: exit %d:\n%s", code, out)
	}

	// --url replaces the modelines, and writes no schema.
	code, out, _ = runSoulctl(t, "scenario", "schema", dir, "--url", editorschema.BaseURL)
	if code != 0 || !strings.Contains(out, "6 modelines set") {
		t.Fatalf("--url: exit %d:\n%s", code, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "service.yml"))
	if want := editorschema.ModelinePrefix + editorschema.BaseURL + "service.schema.json\n# the demo\nname: demo\n"; string(b) != want {
		t.Errorf("service.yml after --url:\n%s\nwant\n%s", b, want)
	}
}

func TestScenarioSchemaPrintAndErrors(t *testing.T) {
	code, out, _ := runSoulctl(t, "scenario", "schema", "--print", "procedure")
	if code != 0 || !strings.Contains(out, `"title": "Soul Stack Checker procedure"`) {
		t.Fatalf("--print procedure: exit %d:\n%.300s", code, out)
	}
	if code, _, errOut := runSoulctl(t, "scenario", "schema", "--print", "scenarios"); code != 2 || !strings.Contains(errOut, "one of") {
		t.Errorf("--print of an unknown kind: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runSoulctl(t, "scenario", "schema", t.TempDir()); code != 2 || !strings.Contains(errOut, "no service.yml") {
		t.Errorf("a directory without service.yml: exit %d: %s", code, errOut)
	}
}
