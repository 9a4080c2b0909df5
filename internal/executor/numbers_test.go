package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
)

// TestNumbersKeepTheirTypeInTemplates is the rendering golden test of
// SPEC §9 (issue 13 item 5): integers from essence, vars.yml, params.vars,
// input and a register render as integers (600100000, never 6.001e+08;
// 1000000, never 1e+06), floats, bools and nested maps as written — after
// the trip over the wire (JSON) a real soul's work and results take.
func TestNumbersKeepTheirTypeInTemplates(t *testing.T) {
	tmpl := `essence: {{ .essence.big }} {{ .essence.ratio }} {{ .essence.on }} {{ .essence.nested.deep.n }}
vars.yml: {{ .vars.vbig }} {{ .vars.vfloat }} {{ .vars.vmap.k }}
params.vars: {{ .pbig }} {{ .pfloat }} {{ .pbool }}
input: {{ .input.n }} {{ .input.num }} {{ .input.f }}
register: {{ .rsize }} {{ .rfloat }}
json: {{ toJSON .essence.nested }}
`
	svc, problems := dsl.LoadFS(fstest.MapFS{
		"service.yml":                 {Data: []byte("name: numbers\n")},
		"essence/_default.yaml":       {Data: []byte("big: 600100000\nratio: 0.25\non: true\nnested: {deep: {n: 1000000, list: [1, 2.5, false]}}\n")},
		"scenario/s/vars.yml":         {Data: []byte("vbig: 1000000\nvfloat: 1.5\nvmap: {k: 7000000000}\n")},
		"scenario/s/templates/t.tmpl": {Data: []byte(tmpl)},
		"scenario/s/main.yml": {Data: []byte(`input:
  n: {type: integer}
  num: {type: number}
  f: {type: number}
tasks:
  - name: probe
    module: core.file.present
    register: r
    params: {path: /probe}
  - name: render
    module: core.file.rendered
    params:
      path: /out
      template: templates/t.tmpl
      vars: {pbig: 600100000, pfloat: 2.5, pbool: false, rsize: "${ register.r.size }", rfloat: "${ double(register.r.size) / 8.0 + 0.5 }"}
`)},
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	sc := svc.Scenarios["s"]
	// The API decodes the run's input from JSON.
	var given map[string]any
	if err := json.Unmarshal([]byte(`{"n": 600100000, "num": 1000000, "f": 0.125}`), &given); err != nil {
		t.Fatal(err)
	}
	input, err := sc.Input.Resolve(given)
	if err != nil {
		t.Fatal(err)
	}
	// A register filled from a result that came back over the wire.
	wire, _ := json.Marshal(domain.Result{Data: map[string]any{"size": int64(1000000)}})
	res, err := dispatch.DecodeResult(wire)
	if err != nil {
		t.Fatal(err)
	}
	regs := expr.NewRegisters()
	regs.Set("r", "h1", res)
	act := &expr.Activation{Input: input, Essence: svc.Essences["_default"], Vars: sc.Vars, Registers: regs, CurrentSID: "h1"}

	root := t.TempDir()
	call := func(ctx context.Context, c dispatch.Call, check bool, _ time.Duration) domain.Result {
		b, err := json.Marshal(dispatch.Work{Call: &c, Check: check})
		if err != nil {
			t.Fatal(err)
		}
		w, err := dispatch.DecodeWork(b) // what the soul does with it
		if err != nil {
			t.Fatal(err)
		}
		files := fstest.MapFS{}
		for k, v := range w.Call.Files {
			files[k] = &fstest.MapFile{Data: v}
		}
		m, _ := module.Lookup(w.Call.Module)
		r, err := m.Apply(ctx, w.Call.Params, &module.Env{Root: root, Files: files, TemplateData: w.Call.TemplateData})
		if err != nil {
			return domain.Result{Failed: true, Msg: err.Error()}
		}
		return r
	}
	env := expr.ForKind(expr.KindScenario)
	r := executor.Attempt(context.Background(), sc.Tasks[1], act, executor.Options{Env: env, Call: call, Files: sc.Files})
	if r.Failed {
		t.Fatalf("render failed: %s", r.Msg)
	}
	got, err := os.ReadFile(filepath.Join(root, "out"))
	if err != nil {
		t.Fatal(err)
	}
	want := `essence: 600100000 0.25 true 1000000
vars.yml: 1000000 1.5 7000000000
params.vars: 600100000 2.5 false
input: 600100000 1000000 0.125
register: 1000000 125000.5
json: {"deep":{"list":[1,2.5,false],"n":1000000}}
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}
