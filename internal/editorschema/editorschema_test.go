package editorschema

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/dsl"
	_ "github.com/soulstack/soulstack/internal/stateschema/dslhook" // services with state_schema load as in the Keeper
)

var repoRoot = filepath.Join("..", "..")

// compiled compiles every generated schema once, by file name.
func compiled(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	docs, err := Documents()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	for _, d := range docs {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.JSON))
		if err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
		if err := c.AddResource(BaseURL+d.File, v); err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, d := range docs {
		s, err := c.Compile(BaseURL + d.File)
		if err != nil {
			t.Fatalf("%s does not compile: %v", d.File, err)
		}
		out[d.File] = s
	}
	return out
}

// validateYAML checks YAML data against s as an editor's YAML language
// server does: the document decoded, then validated as JSON.
func validateYAML(s *jsonschema.Schema, data []byte) error {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// TestCommittedSchemasCurrent: docs/schemas/ holds exactly what the
// validators' definitions generate today; a key, module or param changed
// without `go generate ./internal/editorschema` fails here.
func TestCommittedSchemasCurrent(t *testing.T) {
	docs, err := Documents()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repoRoot, Dir)
	want := map[string]bool{}
	for _, d := range docs {
		want[d.File] = true
		got, err := os.ReadFile(filepath.Join(dir, d.File))
		if err != nil {
			t.Errorf("%v (run: go generate ./internal/editorschema)", err)
			continue
		}
		if !bytes.Equal(got, d.JSON) {
			t.Errorf("%s/%s is stale: run go generate ./internal/editorschema", Dir, d.File)
		}
	}
	have, _ := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	for _, f := range have {
		if !want[filepath.Base(f)] {
			t.Errorf("%s is no longer generated: run go generate ./internal/editorschema", f)
		}
	}
	if len(docs) != 8 {
		t.Errorf("%d schemas, want 8 (service, scenario, destiny, tasks, essence, health, rule, procedure)", len(docs))
	}
}

// TestExamplesValidate: every file of every example service, and every
// example procedure, validates against its schema, and the service itself
// loads without problems (so the schema is not stricter than the
// validator on real repositories).
func TestExamplesValidate(t *testing.T) {
	schemas := compiled(t)
	services, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "service.yml"))
	if err != nil || len(services) < 8 {
		t.Fatalf("found %d example services (%v)", len(services), err)
	}
	perSchema := map[string]int{}
	for _, svcFile := range services {
		dir := filepath.Dir(svcFile)
		if _, ps := dsl.Load(dir); len(ps) > 0 {
			t.Errorf("%s does not load: %v", dir, ps)
		}
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			file := SchemaFor(filepath.ToSlash(rel), data)
			if file == "" {
				return nil
			}
			perSchema[file]++
			if err := validateYAML(schemas[file], data); err != nil {
				t.Errorf("%s does not validate against %s:\n%v", path, file, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	procs, _ := filepath.Glob(filepath.Join(repoRoot, "examples", "procedures", "*.yaml"))
	for _, f := range procs {
		if filepath.Base(f) == "vm_monitoring.yaml" {
			continue // the seed's file, deliberately invalid YAML (SPEC §13); .fixed.yaml is checked
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checker.ParseProcedure(filepath.Base(f), data); err != nil {
			t.Errorf("%s does not parse: %v", f, err)
		}
		perSchema[checker.ProcedureSchemaFile]++
		if err := validateYAML(schemas[checker.ProcedureSchemaFile], data); err != nil {
			t.Errorf("%s does not validate against %s:\n%v", f, checker.ProcedureSchemaFile, err)
		}
	}
	for _, f := range []string{dsl.SchemaService, dsl.SchemaScenario, dsl.SchemaDestiny, dsl.SchemaEssence, dsl.SchemaHealth, dsl.SchemaRule, checker.ProcedureSchemaFile} {
		if perSchema[f] == 0 {
			t.Errorf("no example file was checked against %s", f)
		}
	}
	t.Logf("files checked per schema: %v", perSchema)
}

// base is a valid service repository the cases below break one file of.
var base = map[string]string{
	"service.yml":               "name: demo\n",
	"essence/_default.yaml":     "port: 8080\n",
	"scenario/s/main.yml":       "tasks:\n  - name: ping\n    module: core.test.ping\n",
	"destiny/d/main.yml":        "tasks:\n  - module: core.test.ping\n",
	"health/h.yml":              "module: core.test.ping\n",
	"rules/r.yml":               "on: health.changed\ndo:\n  run:\n    scenario: s\ncooldown: 10m\nmax_per_hour: 5\nmax_concurrent: 1\n",
	"scenario/s/templates/x.j2": "x\n",
}

// repo is base with files replaced.
func repo(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for k, v := range base {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fsys
}

// TestSchemaAgreesWithValidator: a mistake the validator rejects is
// rejected by the schema too (each one JSON Schema can express: unknown
// keys, wrong types, unknown modules, params a module does not take,
// missing required params, exactly-one groups, misplaced keys), and
// valid variants the validator accepts are accepted by the schema.
func TestSchemaAgreesWithValidator(t *testing.T) {
	schemas := compiled(t)
	cases := []struct {
		name, file, src string
		valid           bool
		// problem is a part of the validator's message for the mistake.
		problem string
	}{
		{"unknown task key", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    retries: 3\n", false, "unknown key retries"},
		{"unknown top key", "scenario/s/main.yml", "task:\n  - module: core.test.ping\n", false, "unknown key task"},
		{"unknown module", "scenario/s/main.yml", "tasks:\n  - module: core.file.rendred\n", false, "core.file.rendred"},
		{"unknown param", "scenario/s/main.yml", "tasks:\n  - module: core.file.rendered\n    params: {path: /etc/x, template: templates/x.j2, mdoe: \"0644\"}\n", false, "no param mdoe"},
		{"missing required param", "scenario/s/main.yml", "tasks:\n  - module: core.file.rendered\n    params: {path: /etc/x}\n", false, "needs param template"},
		{"missing params of a module with required ones", "scenario/s/main.yml", "tasks:\n  - module: core.file.rendered\n", false, "needs param"},
		{"param of the wrong type", "scenario/s/main.yml", "tasks:\n  - module: core.file.rendered\n    params: {path: /etc/x, template: templates/x.j2, makedirs: \"yes\"}\n", false, "makedirs"},
		{"exactly one of a group", "scenario/s/main.yml", "tasks:\n  - module: core.exec.run\n    params: {command: \"true\", cmd: [\"true\"]}\n", false, "exactly one"},
		{"timeout without unit", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    timeout: 30\n", false, "timeout"},
		{"serial zero", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    serial: 0\n", false, "serial"},
		{"serial with run_once", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    serial: 2\n    run_once: true\n", false, "run_once"},
		{"run_once not boolean", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    run_once: \"yes\"\n", false, "run_once"},
		{"module and apply", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    apply: {destiny: d}\n", false, "exclusive"},
		{"task doing nothing", "scenario/s/main.yml", "tasks:\n  - name: idle\n", false, "does nothing"},
		{"on: expression", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    on: [\"${ incarnation.name }\"]\n", false, "on:"},
		{"when as template", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    when: \"${ true }\"\n", false, "bare CEL"},
		{"register self", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    register: self\n", false, "reserved"},
		{"keeper-side module without on: keeper", "scenario/s/main.yml", "tasks:\n  - module: core.cloud.absent\n    params: {provider: p, names: [a]}\n", false, "on: keeper"},
		{"input without type", "scenario/s/main.yml", "input:\n  port: {default: 80}\ntasks:\n  - module: core.test.ping\n", false, "no type"},
		{"input of unknown type", "scenario/s/main.yml", "input:\n  port: {type: int}\ntasks:\n  - module: core.test.ping\n", false, "unknown type"},
		{"retry without count", "scenario/s/main.yml", "tasks:\n  - module: core.test.ping\n    retry: {delay: 1s}\n", false, "count"},
		{"scenario-only key in a destiny", "destiny/d/main.yml", "tasks:\n  - module: core.test.ping\n    on: [web]\n", false, "scenario-only"},
		{"state_changes in a destiny", "destiny/d/main.yml", "state_changes: {sets: {a: 1}}\ntasks:\n  - module: core.test.ping\n", false, "scenario-only"},
		{"service.yml unknown key", "service.yml", "name: demo\nversion: 2\n", false, "unknown key version"},
		{"service.yml without name", "service.yml", "description: x\n", false, "name: is required"},
		{"service.yml secret on the whole state", "service.yml", "name: demo\nstate_schema:\n  type: object\n  secret: true\n", false, "secret"},
		{"essence not a map", "essence/_default.yaml", "- a\n- b\n", false, "must be a map"},
		{"health check with a module that changes hosts", "health/h.yml", "module: core.service.restarted\nparams: {name: x}\n", false, "cannot be a health check"},
		{"health check unknown key", "health/h.yml", "module: core.test.ping\ninterval: 10s\n", false, "unknown key interval"},
		{"health check on keeper", "health/h.yml", "module: core.test.ping\non: keeper\n", false, "keeper"},
		{"rule without guardrails", "rules/r.yml", "on: health.changed\ndo:\n  run:\n    scenario: s\n", false, "cooldown"},
		{"rule on an unknown event", "rules/r.yml", "on: health.change\ndo:\n  run:\n    scenario: s\ncooldown: 1m\nmax_per_hour: 5\nmax_concurrent: 1\n", false, "unknown event kind"},
		{"rule with two actions", "rules/r.yml", "on: health.changed\ndo:\n  run: {scenario: s}\n  notify: {endpoint: e, message: m}\ncooldown: 1m\nmax_per_hour: 5\nmax_concurrent: 1\n", false, "exactly one action"},
		{"rule action key unknown", "rules/r.yml", "on: health.changed\ndo:\n  run: {scenario: s, scenaro: t}\ncooldown: 1m\nmax_per_hour: 5\nmax_concurrent: 1\n", false, "unknown key scenaro"},

		{"integer param as a whole expression", "scenario/s/main.yml", "tasks:\n  - module: core.wait.port\n    params: {port: \"${ essence.port }\"}\n", true, ""},
		{"null optional param", "scenario/s/main.yml", "tasks:\n  - module: core.file.rendered\n    params: {path: /etc/x, template: templates/x.j2, mode: null}\n", true, ""},
		{"serial percentage and block", "scenario/s/main.yml", "tasks:\n  - serial: \"25%\"\n    block:\n      - module: core.test.ping\n        when: true\n        register: p\n      - module: core.test.ping\n        onchanges: p\n", true, ""},
		{"on keeper with a keeper-side module", "scenario/s/main.yml", "tasks:\n  - module: core.cloud.absent\n    on: keeper\n    params: {provider: p, names: [a]}\n", true, ""},
		{"apply with input and loop", "scenario/s/main.yml", "tasks:\n  - apply: {destiny: d, input: {}}\n    loop: [1, 2]\n    retry: {count: 2, delay: 0s, until: \"true\"}\n    timeout: 1m30s\n", true, ""},
		{"typed inputs", "scenario/s/main.yml", "input:\n  port: {type: integer, default: 80, required: false, description: p}\n  pw: {type: string, secret: true}\ntasks:\n  - module: core.test.ping\n", true, ""},
		{"health check with every and on", "health/h.yml", "description: ok\nmodule: core.exec.run\nparams: {command: \"true\"}\nevery: 30s\ntimeout: 5s\non: [web]\nafter_runs: true\n", true, ""},
		{"notify rule", "rules/r.yml", "on: run.ended\nif: event.status == \"failed\"\ndo:\n  notify: {endpoints: [ops], message: \"${ event.apply_id } failed\"}\ncooldown: 0s\nmax_per_hour: 10\nmax_concurrent: 1\n", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ps := dsl.LoadFS(repo(map[string]string{c.file: c.src}))
			var found bool
			for _, p := range ps {
				if strings.Contains(p.Message, c.problem) {
					found = true
				}
			}
			switch {
			case c.valid && len(ps) > 0:
				t.Fatalf("the validator rejects this valid case: %v", ps)
			case !c.valid && !found:
				t.Fatalf("the validator does not report %q: %v", c.problem, ps)
			}
			file := SchemaFor(c.file, []byte(c.src))
			err := validateYAML(schemas[file], []byte(c.src))
			switch {
			case c.valid && err != nil:
				t.Errorf("%s rejects what the validator accepts:\n%v", file, err)
			case !c.valid && err == nil:
				t.Errorf("%s accepts what the validator rejects (%v)", file, ps)
			}
		})
	}
}

// TestProcedureSchemaAgreesWithParser: the same for Checker procedures.
func TestProcedureSchemaAgreesWithParser(t *testing.T) {
	s := compiled(t)[checker.ProcedureSchemaFile]
	const step = "steps:\n  one:\n    conditions:\n      - apicall: souls list\n        expect:\n          - {filter: length(@), op: \">\", value: 0}\n"
	cases := []struct {
		name, src string
		valid     bool
	}{
		{"minimal", step, true},
		{"vars, config and action", "config: {run-on-vip: true, timeout: 60}\nvars:\n  n: {type: number, default: 1, visibility: public}\n  ids: {type: \"array[string]\"}\n" +
			"steps:\n  one:\n    action:\n      apicall: [souls list, souls list]\n      parse: [{filter: \"[].sid\", op: store, var: ids}]\n      log: done\n", true},
		{"unknown top key", step + "name: x\n", false},
		{"unknown op", strings.Replace(step, `op: ">"`, "op: gt", 1), false},
		{"no steps", "config: {timeout: 5}\n", false},
		{"apicall and const", strings.Replace(step, "apicall: souls list", "apicall: souls list\n        const: 1", 1), false},
		{"condition without expect", "steps:\n  one:\n    conditions:\n      - apicall: souls list\n", false},
		{"unknown var type", "vars:\n  n: {type: int}\n" + step, false},
		{"secret var with a default", "vars:\n  pw: {type: string, secret: true, default: x}\n" + step, false},
		{"unknown handler", strings.Replace(step, "value: 0}", "value: 0}\n        on-error: [{error-type: AttemptsLimitReached, handler: _stop}]", 1), false},
		{"attempts over the bound", strings.Replace(step, "value: 0}", "value: 0}\n        attempts: {max: 5000, interval: 1}", 1), false},
		{"parse without apicall", "vars:\n  x: {type: string}\nsteps:\n  one:\n    action:\n      parse: [{filter: a, op: store, var: x}]\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, perr := checker.ParseProcedure("p", []byte(c.src))
			if c.valid != (perr == nil) {
				t.Fatalf("parser: valid=%v, error %v", c.valid, perr)
			}
			err := validateYAML(s, []byte(c.src))
			if c.valid != (err == nil) {
				t.Errorf("schema: valid=%v, error %v", c.valid, err)
			}
		})
	}
}

// TestSchemaForPaths: which schema applies to which repository file.
func TestSchemaForPaths(t *testing.T) {
	cases := map[string]string{
		"service.yml":                dsl.SchemaService,
		"scenario/create/main.yml":   dsl.SchemaScenario,
		"destiny/redis/main.yml":     dsl.SchemaDestiny,
		"essence/_default.yaml":      dsl.SchemaEssence,
		"health/ping.yml":            dsl.SchemaHealth,
		"rules/page.yml":             dsl.SchemaRule,
		"scenario/create/vars.yml":   "",
		"scenario/create/steps.yml":  dsl.SchemaTasks,
		"scenario/create/vars/a.yml": "",
		"modules/x/module.yml":       "",
		"README.md":                  "",
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		data := []byte("# a comment\n- module: core.test.ping\n")
		if got := SchemaFor(n, data); got != cases[n] {
			t.Errorf("SchemaFor(%s) = %q, want %q", n, got, cases[n])
		}
	}
	if got := SchemaFor("scenario/create/defaults.yml", []byte("a: 1\n")); got != "" {
		t.Errorf("a map neighbour file got %q, want none", got)
	}
}

// TestEditorsPageNamesEverySchema: docs/editors.md lists every schema and
// its VS Code settings line points at the published file.
func TestEditorsPageNamesEverySchema(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "editors.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Documents()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !strings.Contains(string(page), "(schemas/"+d.File+")") {
			t.Errorf("docs/editors.md does not link schemas/%s", d.File)
		}
		if d.File != dsl.SchemaTasks && !strings.Contains(string(page), `"`+BaseURL+d.File+`": "**/`) {
			t.Errorf("docs/editors.md has no VS Code yaml.schemas line for %s", d.File)
		}
	}
}
