package dsl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds arbitrary YAML to the loader as a scenario's main.yml, as
// the neighbour file it includes, and as a destiny's main.yml. The loader
// must never panic, and every problem must name a file.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"redis", "the-service", "my-service"} {
		paths, _ := filepath.Glob(filepath.Join(examplesDir, dir, "*", "*", "main.yml"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{
		"tasks:\n  - include: inc.yml\n", "tasks: [{module: core.test.ping, on: [a, '${ x }'], serial: '50%'}]",
		"a: &x [*x]", "tasks:\n  - &t {module: core.test.ping}\n  - *t\n", "- include: inc.yml\n",
		"input: {x: {type: integer, default: 1.5}}\ntasks: []", "tasks:\n- block:\n  - block:\n    - module: core.test.ping\n",
		"tasks: [{module: core.exec.run, params: {command: '${ register.x.stdout', cmd: 1}}]",
		"<<: {a: 1}\n", "\t- x", "tasks:\n  - name: a\n   module: b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{
			"service.yml":           {Data: []byte("name: fuzz\nstate_schema: {type: object}\n")},
			"scenario/s/main.yml":   {Data: data},
			"scenario/s/inc.yml":    {Data: data},
			"scenario/s/vars.yml":   {Data: data},
			"destiny/d/main.yml":    {Data: data},
			"destiny/d/inc.yml":     {Data: data},
			"scenario/t/main.yml":   {Data: []byte("tasks:\n  - include: inc.yml\n  - apply: {destiny: d}\n")},
			"scenario/t/inc.yml":    {Data: data},
			"essence/_default.yaml": {Data: data},
		}
		svc, problems := LoadFS(fsys)
		if svc == nil {
			t.Fatal("LoadFS returned no service")
		}
		for _, p := range problems {
			if p.Pos.File == "" || p.Pos.Line < 0 || p.Message == "" {
				t.Fatalf("malformed problem %#v", p)
			}
		}
		if len(problems) == 0 && svc.Scenarios["s"] == nil {
			t.Fatal("no problems but scenario s is missing")
		}
		if d := svc.Destinies["d"]; d != nil {
			_, _ = ParseDestiny("d", d.Files, nil)
		}
	})
}

// TestAliasBomb: exponential YAML alias expansion is cut off with one
// problem instead of exhausting time or memory.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("tasks:\n- module: core.test.echo\n  params:\n    message: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "    l%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	_, problems := LoadFS(fstest.MapFS{
		"service.yml":         {Data: []byte("name: bomb\n")},
		"scenario/s/main.yml": {Data: []byte(b.String())},
	})
	found := false
	for _, p := range problems {
		found = found || strings.Contains(p.Message, "expands to more than 2000000 YAML nodes")
	}
	if !found {
		t.Errorf("problems = %v, want the expansion limit", problems)
	}
}
