package executor_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
)

// A core.systemd.unit rendered from a template of the scenario gets what
// core.file.rendered gets: the scenario's files and the template data
// (it failed at run time with "template … not found" before), and a
// template path that does not exist is refused when the service loads.
func TestSystemdUnitTemplateTravelsWithItsFiles(t *testing.T) {
	files := fstest.MapFS{
		"service.yml":                      {Data: []byte("name: units\n")},
		"scenario/s/templates/app.service": {Data: []byte("[Service]\nExecStart=/usr/bin/app --port {{ .port }}\n")},
		"scenario/s/main.yml": {Data: []byte(`tasks:
  - name: unit
    module: core.systemd.unit
    params:
      name: app.service
      template: templates/app.service
      vars: {port: 8080}
`)},
	}
	svc, problems := dsl.LoadFS(files)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	sc := svc.Scenarios["s"]
	var got dispatch.Call
	call := func(_ context.Context, c dispatch.Call, _ bool, _ time.Duration) domain.Result {
		got = c
		return domain.Result{}
	}
	act := &expr.Activation{Vars: sc.Vars, Registers: expr.NewRegisters(), CurrentSID: "h1"}
	r := executor.Attempt(context.Background(), sc.Tasks[0], act,
		executor.Options{Env: expr.ForKind(expr.KindScenario), Call: call, Files: sc.Files})
	if r.Failed {
		t.Fatalf("attempt failed: %s", r.Msg)
	}
	if _, ok := got.Files["templates/app.service"]; !ok {
		t.Errorf("the unit's template did not travel with the work: files %v", keys(got.Files))
	}
	if got.TemplateData == nil {
		t.Error("the unit's work has no template data")
	}

	files["scenario/s/main.yml"] = &fstest.MapFile{Data: []byte(`tasks:
  - name: unit
    module: core.systemd.unit
    params: {name: app.service, template: templates/missing.service}
`)}
	if _, problems := dsl.LoadFS(files); len(problems) == 0 || !strings.Contains(problems[0].Message, "missing.service") {
		t.Errorf("a missing unit template was not refused at load: %v", problems)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
