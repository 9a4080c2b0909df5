package keeper_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
)

// passSecret launches an incarnation with a store secret read by
// {{ secret("api_token") }} passed into the create scenario's input named
// by the var field.
const passSecret = `vars:
  field:
    type: string
    visibility: public
steps:
  create:
    action:
      apicall: "incarnation create --name guarded --service guarded --covens nowhere --input '{\"{{field}}\": \"{{ secret(\"api_token\") }}\"}'"
`

// TestCheckerSecretIntoScenarioInput reproduces the second half of audit
// L10 on a real keeper: a procedure reads a store secret with
// {{ secret("name") }} and passes it into a scenario input. Into an input
// declared secret: true it goes through (the create then fails for its own
// reason: no soul carries the coven); into one that is not, the apicall is
// refused with a clear error before any request, and the secret is in no
// task, log line or audit entry.
func TestCheckerSecretIntoScenarioInput(t *testing.T) {
	const val = "LAUNCH-SECRET-456"
	f := inProcessKeeper(t, "")
	repo := catalogtest.NewRepo(t)
	repo.Commit(map[string]string{
		"service.yml": "name: guarded\n",
		"scenario/create/main.yml": `
input:
  pw: {type: string, secret: true}
  note: {type: string, default: ""}
tasks: []
`}, "v1")
	if _, err := f.c.RegisterService(f.ctx, apitypes.RegisterServiceRequest{Name: "guarded", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.SetSecret(f.ctx, "api_token", val); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.PutProcedure(f.ctx, "pass_secret", passSecret); err != nil {
		t.Fatal(err)
	}

	if list, err := f.c.ListSecrets(f.ctx); err != nil || len(list) != 1 || !slices.Contains(list[0].UsedBy, "procedure/pass_secret") {
		t.Fatalf("secret list does not say which procedure reads api_token: %+v %v", list, err)
	}

	task := f.execute("pass_secret", map[string]any{"field": "note"})
	if task.Status != "FAILURE" || !strings.Contains(task.RunError, `input "note" of scenario create`) || !strings.Contains(task.RunError, "secret: true") {
		t.Fatalf("a secret into a plain input: %s %q\n%s", task.Status, task.RunError, taskLog(task))
	}
	if runs, err := f.c.ListRuns(f.ctx, "guarded", 0); err == nil && len(runs) > 0 {
		t.Fatalf("the refused apicall started a run: %+v", runs)
	}

	task2 := f.execute("pass_secret", map[string]any{"field": "pw"})
	if task2.Status != "FAILURE" || !strings.Contains(task2.RunError, "no accepted soul carries") {
		t.Fatalf("a secret into a secret input must pass the guard (and fail for want of souls): %s %q\n%s", task2.Status, task2.RunError, taskLog(task2))
	}

	audit, err := f.c.ListAudit(f.ctx, apitypes.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"task": task, "task2": task2, "audit": audit} {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), val) {
			t.Errorf("the %s holds the secret:\n%s", name, b)
		}
	}
	if !strings.Contains(taskLog(task), "****") {
		t.Errorf("the step log does not show the secret masked:\n%s", taskLog(task))
	}
}
