package dsl

import (
	"strings"
	"testing"
	"testing/fstest"
)

const greetSpec = `summary: Greet someone
check_mode: true
params:
  who: {type: string, required: true}
  times: {type: integer, default: 1}
output:
  greeting: {type: string}
`

func customRepo(main string) fstest.MapFS {
	return fstest.MapFS{
		"service.yml":                {Data: []byte("name: s\n")},
		"modules/greet/module.yml":   {Data: []byte(greetSpec)},
		"modules/greet/run":          {Data: []byte("#!/bin/sh\necho '{}'\n"), Mode: 0o755},
		"scenario/create/main.yml":   {Data: []byte(main)},
		"destiny/hello/main.yml":     {Data: []byte("tasks:\n  - module: service.greet\n    params: {who: x}\n")},
		"scenario/create/vars.yml":   {Data: []byte("n: 2\n")},
		"essence/_default.yaml":      {Data: []byte("name: world\n")},
		"modules/.hidden/module.yml": {Data: []byte("not: read\n")},
	}
}

func TestCustomModuleLoadsAndTypes(t *testing.T) {
	svc, problems := LoadFS(customRepo(`tasks:
  - name: greet
    module: service.greet
    params: {who: "${ essence.name }", times: "${ vars.n }"}
    register: g
  - name: use it
    module: core.test.echo
    params: {message: "${ register.g.greeting + string(register.g.rc) }"}
`))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	m := svc.Modules["service.greet"]
	if m == nil || m.SHA256 == "" || !m.Spec.CheckMode || m.Schema().Params["times"].Default != 1 {
		t.Fatalf("module = %+v", m)
	}
	used := UsedModules(svc.Destinies["hello"].Tasks, svc.Modules)
	if len(used) != 1 || used["service.greet"] != m {
		t.Fatalf("UsedModules = %v", used)
	}
	if _, err := ParseDestiny("hello", svc.Destinies["hello"].Files, nil); err == nil ||
		!strings.Contains(err.Error(), "unknown module service.greet") {
		t.Fatalf("a bundle without its modules parsed: %v", err)
	}
	if _, err := ParseDestiny("hello", svc.Destinies["hello"].Files, used); err != nil {
		t.Fatalf("bundle with its modules: %v", err)
	}
}

func TestCustomModuleValidatedLikeCore(t *testing.T) {
	cases := []struct {
		name string
		main string
		want []string
	}{
		{"unknown param", "tasks:\n  - module: service.greet\n    params: {who: a, tims: 2}\n",
			[]string{"scenario/create/main.yml:3:22: service.greet has no param tims (accepted: times, who) (did you mean times?)"}},
		{"wrong type", "tasks:\n  - module: service.greet\n    params: {who: a, times: many}\n",
			[]string{"scenario/create/main.yml:3:29: param times of service.greet must be an integer, got \"many\""}},
		{"wrong expression type", "tasks:\n  - module: service.greet\n    params: {who: a, times: \"${ essence.name }\"}\n",
			[]string{"scenario/create/main.yml:3:29: param times of service.greet must be an integer, but ${ essence.name } is string"}},
		{"missing required", "tasks:\n  - module: service.greet\n    params: {times: 2}\n",
			[]string{"scenario/create/main.yml:3:13: service.greet needs param who"}},
		{"undeclared output field", "tasks:\n  - module: service.greet\n    params: {who: a}\n    register: g\n  - module: core.test.echo\n    params: {message: \"${ register.g.greting }\"}\n",
			[]string{"scenario/create/main.yml:6:", "greting"}},
		{"unknown custom module", "tasks:\n  - module: service.gret\n",
			[]string{"scenario/create/main.yml:2:13: unknown module service.gret (did you mean service.greet?)"}},
		{"missing custom module", "tasks:\n  - module: service.deploy\n",
			[]string{"unknown module service.deploy", "modules/deploy/module.yml and modules/deploy/run"}},
		{"on keeper", "tasks:\n  - module: service.greet\n    on: keeper\n    params: {who: a}\n",
			[]string{"service.greet runs a program and cannot run on: keeper"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, problems := LoadFS(customRepo(c.main))
			got := problems.Error()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("problems:\n%s\nwant %q", got, w)
				}
			}
		})
	}
}

func TestCustomModuleDirectoryProblems(t *testing.T) {
	main := "tasks:\n  - module: service.greet\n    params: {who: a}\n"
	cases := []struct {
		name   string
		change func(fstest.MapFS)
		want   string
	}{
		{"program missing", func(f fstest.MapFS) { delete(f, "modules/greet/run") },
			"modules/greet/run: the module's program is missing"},
		{"not executable", func(f fstest.MapFS) { f["modules/greet/run"].Mode = 0o644 },
			"modules/greet/run: modules/greet/run is not executable: chmod +x"},
		{"spec missing", func(f fstest.MapFS) { delete(f, "modules/greet/module.yml") },
			"modules/greet/module.yml: module.yml is missing"},
		{"bad spec", func(f fstest.MapFS) {
			f["modules/greet/module.yml"].Data = []byte("summary: s\nparams:\n  who: {type: strng}\n")
		},
			`modules/greet/module.yml:3:15: param who: unknown type "strng"`},
		{"bad name", func(f fstest.MapFS) {
			f["modules/Greet/module.yml"] = &fstest.MapFile{Data: []byte(greetSpec)}
		}, "module directory name \"Greet\" must start with a lower-case letter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := customRepo(main)
			c.change(fsys)
			_, problems := LoadFS(fsys)
			if !strings.Contains(problems.Error(), c.want) {
				t.Fatalf("problems:\n%s\nwant %q", problems.Error(), c.want)
			}
			if strings.Contains(problems.Error(), "unknown module service.greet") {
				t.Errorf("a broken module is reported again at each task:\n%s", problems.Error())
			}
		})
	}
}
