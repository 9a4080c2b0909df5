package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/module"
)

// soulctl runs soulctl offline and returns its exit code and output.
func soulctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestModuleList: every registered module is listed with its summary and
// flags, offline, as a table and as JSON.
func TestModuleList(t *testing.T) {
	code, out, errOut := soulctl(t, "module", "list")
	if code != 0 {
		t.Fatalf("module list: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(module.Names())+1 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("module list table:\n%s", out)
	}
	for _, want := range [][]string{
		{"core.pkg.installed", "needs-root", "Ensure packages are installed"},
		{"core.cloud.created", "keeper-side"},
		{"core.exec.run", "runs-program"},
		{"core.test.ping", "read-only"},
	} {
		found := false
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 1 && f[0] == want[0] {
				found = true
				for _, w := range want[1:] {
					if !strings.Contains(l, w) {
						t.Errorf("module list row of %s lacks %q: %s", want[0], w, l)
					}
				}
			}
		}
		if !found {
			t.Errorf("module list lacks %s:\n%s", want[0], out)
		}
	}

	code, out, errOut = soulctl(t, "module", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("module list -o json: exit %d: %s", code, errOut)
	}
	var mods []struct {
		Name    string   `json:"name"`
		Summary string   `json:"summary"`
		Flags   []string `json:"flags"`
	}
	if err := json.Unmarshal([]byte(out), &mods); err != nil {
		t.Fatalf("module list -o json: %v\n%s", err, out)
	}
	if len(mods) != len(module.Names()) {
		t.Fatalf("module list -o json: %d modules, registry has %d", len(mods), len(module.Names()))
	}
	for _, m := range mods {
		if m.Summary == "" || strings.Contains(m.Summary, "\n") {
			t.Errorf("%s: summary %q, want one line", m.Name, m.Summary)
		}
		if m.Flags == nil {
			t.Errorf("%s: flags null, want a list", m.Name)
		}
	}
}

// TestModuleShow: the table form has every param, the groups, the check
// mode and confinement behaviour and an example task.
func TestModuleShow(t *testing.T) {
	code, out, errOut := soulctl(t, "module", "show", "core.pkg.installed")
	if code != 0 {
		t.Fatalf("module show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Name:", "core.pkg.installed", "Flags:", "needs-root",
		"Check mode:", "Under --root:", "refuses to run under a soul's --root",
		"PARAM", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION",
		"version", "exact version wanted",
		"At least one of: name, names",
		"Example:", "module: core.pkg.installed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("module show core.pkg.installed lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := soulctl(t, "module", "show", "--name", "core.cmd.shell"); !strings.Contains(out, "changed_when: false") {
		t.Errorf("module show --name core.cmd.shell: check mode lacks the probe:\n%s", out)
	}
}

type moduleDoc struct {
	Name   string `json:"name"`
	Params []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Required bool   `json:"required"`
		Default  any    `json:"default"`
	} `json:"params"`
	ExactlyOne [][]string `json:"exactly_one"`
	AtLeastOne [][]string `json:"at_least_one"`
	CheckMode  string     `json:"check_mode"`
	Example    string     `json:"example"`
}

// TestModuleShowJSON: -o json and -o yaml carry the schema; the example
// of every module is a task whose params the module accepts.
func TestModuleShowJSON(t *testing.T) {
	code, out, errOut := soulctl(t, "module", "show", "core.exec.run", "-o", "json")
	if code != 0 {
		t.Fatalf("module show -o json: exit %d: %s", code, errOut)
	}
	var d moduleDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("module show -o json: %v\n%s", err, out)
	}
	if d.Name != "core.exec.run" || len(d.ExactlyOne) != 1 || strings.Join(d.ExactlyOne[0], ",") != "command,cmd" || d.AtLeastOne == nil {
		t.Errorf("module show core.exec.run -o json: %+v", d)
	}

	code, out, errOut = soulctl(t, "module", "show", "core.sysctl.present", "-o", "yaml")
	if code != 0 {
		t.Fatalf("module show -o yaml: exit %d: %s", code, errOut)
	}
	d = moduleDoc{}
	if err := yaml.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("module show -o yaml: %v\n%s", err, out)
	}
	params := map[string]bool{}
	for _, p := range d.Params {
		params[p.Name] = true
		switch p.Name {
		case "name":
			if !p.Required || p.Type != "string" {
				t.Errorf("sysctl name: %+v", p)
			}
		case "persist":
			if p.Required || p.Default != true {
				t.Errorf("sysctl persist: %+v", p)
			}
		}
	}
	if !params["name"] || !params["value"] || !params["persist"] || !params["file"] || len(d.Params) != 4 {
		t.Errorf("sysctl params: %+v", d.Params)
	}

	for _, name := range module.Names() {
		code, out, errOut := soulctl(t, "module", "show", name, "-o", "json")
		if code != 0 {
			t.Fatalf("module show %s: exit %d: %s", name, code, errOut)
		}
		var d moduleDoc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("module show %s: %v", name, err)
		}
		var tasks []struct {
			Module string         `yaml:"module"`
			Params map[string]any `yaml:"params"`
		}
		if err := yaml.Unmarshal([]byte(d.Example), &tasks); err != nil || len(tasks) != 1 || tasks[0].Module != name {
			t.Errorf("%s: example is not one task calling it (%v):\n%s", name, err, d.Example)
			continue
		}
		m, _ := module.Lookup(name)
		if err := module.ValidateParams(m.Schema(), tasks[0].Params); err != nil {
			t.Errorf("%s: example params rejected: %v\n%s", name, err, d.Example)
		}
	}
}

// TestModuleUnknown: an unknown module is a usage error with the closest
// name, core. included.
func TestModuleUnknown(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"core.file.presnt", "did you mean core.file.present?"},
		{"pkg.installed", "did you mean core.pkg.installed?"},
		{"nothing-like-it", `unknown module "nothing-like-it"`},
	} {
		code, out, errOut := soulctl(t, "module", "show", tc.name)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("module show %s: exit %d, stdout %q, stderr %q (want exit 2 and %q)", tc.name, code, out, errOut, tc.want)
		}
	}
	if code, _, errOut := soulctl(t, "module", "show"); code != 2 || !strings.Contains(errOut, "missing name") {
		t.Errorf("module show without a name: exit %d: %s", code, errOut)
	}
}
