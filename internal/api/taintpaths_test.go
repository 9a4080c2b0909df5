package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// pathsService derives values from secret inputs along every path a value
// takes in a scenario besides a param's own CEL: a register field that
// echoes a param, a block's vars, a template rendered on the soul, and
// values that are not strings (a number, a list).
var pathsService = map[string]string{
	"service.yml":                      "name: paths\n",
	"scenario/create/templates/x.tmpl": "pw={{ .input.pw | b64enc }}\n",
	"scenario/create/templates/y.j2":   "pw={{ input.pw | b64encode }}\n",
	"scenario/create/main.yml": `
input:
  pw: {type: string, secret: true}
  pin: {type: integer, secret: true}
tasks:
  - name: echo
    module: core.test.echo
    register: echoed
    params: {message: "${ input.pw }"}
  - name: reuse
    module: core.test.echo
    params: {message: "${ upper(register.echoed.message) }"}
  - name: inner
    vars: {longer: "${ input.pw + '-suffix' }"}
    block:
      - name: in block
        module: core.test.echo
        params: {message: "${ b64enc(vars.longer) }"}
  - name: number
    module: core.test.echo
    params: {message: "${ input.pin * 7 }"}
  - name: list
    module: core.test.echo
    params: {message: "${ input.pw.split('-') }"}
  - name: render
    module: core.file.rendered
    params: {path: /etc/x.conf, template: templates/x.tmpl}
  - name: render jinja
    module: core.file.rendered
    params: {path: /etc/y.conf, template: templates/y.j2}
`,
}

// TestTaintPaths: a value derived from a secret through a register field
// echoing a param, a block var, a template function on the soul, or as a
// number or list, is masked for every viewer (the rendered template's diff
// and digests are withheld); the hosts get the real values.
func TestTaintPaths(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const pw, pin, times7 = "Hunter2-S3cr3t!", 40917, "286419"
	repo := catalogtest.NewRepo(t)
	repo.Commit(pathsService, "v1")
	if _, err := e.client(auth.RoleAdmin).RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "paths", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.UpsertSoul(ctx, store.Soul{SID: "h1", Status: store.SoulConnected, Covens: []string{"paths"}}); err != nil {
		t.Fatal(err)
	}
	e.sim.AddHost(dispatch.SimHost{SID: "h1"})
	b64pw := base64.StdEncoding.EncodeToString([]byte(pw))
	inBlock := base64.StdEncoding.EncodeToString([]byte(pw + "-suffix"))
	rendered := "pw=" + b64pw + "\n"
	sum := sha256.Sum256([]byte(rendered))
	// The host answers as the modules do: echo returns the message.
	echo := func(task string, msg any, stdout string) dispatch.Stub {
		return dispatch.Stub{Task: task, Results: []domain.Result{{Stdout: stdout, Data: map[string]any{"message": msg}}}}
	}
	e.sim.SetStubs([]dispatch.Stub{
		echo("echo", pw, pw), echo("reuse", strings.ToUpper(pw), strings.ToUpper(pw)), echo("in block", inBlock, inBlock),
		echo("number", int64(286419), times7), echo("list", []any{"Hunter2", "S3cr3t!"}, `["Hunter2","S3cr3t!"]`),
		{Task: "render", Results: []domain.Result{{Changed: true, Diff: "+" + rendered, Data: map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": int64(len(rendered))}}}},
		{Task: "render jinja", Results: []domain.Result{{Changed: true, Diff: "+" + rendered, Data: map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": int64(len(rendered))}}}},
	})
	st, b := e.do("POST", "/v1/incarnations", e.tokens[auth.RoleOperator], `{"name":"paths-dev","service":"paths","covens":["paths"],"input":{"pw":"`+pw+`","pin":40917}}`)
	if st != http.StatusAccepted {
		t.Fatalf("create: %d %s", st, b)
	}
	var acc apitypes.Accepted
	if err := json.Unmarshal(b, &acc); err != nil {
		t.Fatal(err)
	}
	if r := e.waitRun(acc.ApplyID); r.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	var delivered strings.Builder
	for _, c := range e.sim.Calls() {
		b, _ := json.Marshal(c.Params)
		delivered.Write(b)
	}
	for _, want := range []string{strings.ToUpper(pw), inBlock, times7, `"Hunter2","S3cr3t!"`} {
		if !strings.Contains(delivered.String(), want) {
			t.Fatalf("the host did not receive %q: %s", want, delivered.String())
		}
	}
	_ = pin

	st, out := e.do("GET", "/v1/runs/"+acc.ApplyID, e.tokens[auth.RoleViewer], "")
	if st != http.StatusOK {
		t.Fatalf("GET run: %d %s", st, out)
	}
	for _, v := range append(forms(pw), strings.ToUpper(pw), inBlock, times7, "Hunter2", "S3cr3t!", hex.EncodeToString(sum[:])) {
		if strings.Contains(string(out), v) {
			t.Errorf("a viewer reads %q (derived from a secret) in:\n%s", v, out)
		}
	}
	// Both engines: the Go template and the Jinja one.
	if n := strings.Count(string(out), "diff withheld"); n != 2 {
		t.Errorf("%d rendered templates' diffs are withheld, want both (the Go and the Jinja one):\n%s", n, out)
	}
}
