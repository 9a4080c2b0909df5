package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
)

// mapSecrets is a secret store for the Checker's tests.
type mapSecrets map[string]string

func (m mapSecrets) Value(_ context.Context, name string) (string, error) {
	if v, ok := m[name]; ok {
		return v, nil
	}
	return "", domain.Errorf(domain.CodeNotFound, "secret %q does not exist", name)
}

// TestL10SecretVarDefaultsNeverInTheSource reproduces audit L10: a secret
// var's default written in the procedure source (which every viewer reads
// through GET /v1/procedures, the UI and the PUT's audit entry) is refused
// with the line and the fix; default_secret takes it from the Keeper's
// secret store instead, so the source holds only the secret's name, and
// the stored task shows it masked.
func TestL10SecretVarDefaultsNeverInTheSource(t *testing.T) {
	const val = "PROC-DEFAULT-SECRET-123"
	calls := filepath.Join(t.TempDir(), "calls")
	script := fmt.Sprintf(`printf '%%s\n' "$*" >> %q; echo '{}'`, calls)
	b := Binding{Prefix: "vault", Executable: "/bin/sh", Args: []string{"-c", script, "vault"}}
	e := newEnv(t, Config{Bindings: []Binding{b}, Secrets: mapSecrets{"api_token": val}})

	_, err := e.c.PutProcedure(t.Context(), "leaky", `vars:
  token: {type: string, secret: true, default: `+val+`}
steps:
  use:
    action:
      apicall: vault use {{token}}
`)
	if err == nil || !strings.Contains(err.Error(), ":2:") || !strings.Contains(err.Error(), "default_secret") {
		t.Fatalf("a secret var with a default in the source: %v", err)
	}
	if _, err := e.c.PutProcedure(t.Context(), "wrong", `vars:
  token: {type: string, default_secret: api_token}
steps:
  use:
    action:
      apicall: vault use {{token}}
`); err == nil || !strings.Contains(err.Error(), "secret: true") {
		t.Fatalf("default_secret on a var that is not secret: %v", err)
	}

	src := `vars:
  token: {type: string, secret: true, default_secret: api_token}
steps:
  use:
    action:
      apicall: vault use {{token}}
      log: "used {{token}}"
`
	e.put("safe", src)
	task := e.execWait("safe", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s: %s\n%s", task.Status, task.RunError, dumpLog(task))
	}
	got, err := os.ReadFile(calls)
	if err != nil || string(got) != "use "+val+"\n" {
		t.Fatalf("the command received %q (%v), want the store's value", got, err)
	}
	stored, _ := json.Marshal(task)
	if strings.Contains(string(stored), val) || task.Vars["token"] != "****" {
		t.Fatalf("the stored task holds the secret:\n%s", stored)
	}
	// A missing store secret fails the launch with a clear error.
	e2 := newEnv(t, Config{Bindings: []Binding{b}, Secrets: mapSecrets{}})
	e2.put("safe", src)
	if _, err := e2.c.Execute(t.Context(), ExecRequest{Procedure: "safe"}); domain.ErrorCode(err) != domain.CodeInvalid || !strings.Contains(err.Error(), "api_token") {
		t.Fatalf("launch without the store secret: %v", err)
	}
}

// TestSecretInTemplates: {{ secret("name") }} in a procedure reads the
// Keeper's store when the task starts: the command gets the value, the
// task and its step log show ****, the source holds only the name; an
// unknown name fails the launch and a malformed call fails the PUT with
// its line.
func TestSecretInTemplates(t *testing.T) {
	const val = "TPL-SECRET-789"
	calls := filepath.Join(t.TempDir(), "calls")
	script := fmt.Sprintf(`printf '%%s\n' "$*" >> %q; echo '{}'`, calls)
	b := Binding{Prefix: "vault", Executable: "/bin/sh", Args: []string{"-c", script, "vault"}}
	e := newEnv(t, Config{Bindings: []Binding{b}, Secrets: mapSecrets{"api_token": val}})
	if _, err := e.c.PutProcedure(t.Context(), "bad", "steps:\n  use:\n    action:\n      apicall: vault use {{ secret(api_token) }}\n"); err == nil || !strings.Contains(err.Error(), ":4:") || !strings.Contains(err.Error(), "quoted secret name") {
		t.Fatalf("a malformed secret(): %v", err)
	}
	src := "steps:\n  use:\n    action:\n      apicall: vault use --token={{ secret(\"api_token\") }}\n      log: \"used {{ secret('api_token') }}\"\n"
	e.put("tpl", src)
	task := e.execWait("tpl", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("status %s: %s\n%s", task.Status, task.RunError, dumpLog(task))
	}
	got, err := os.ReadFile(calls)
	if err != nil || string(got) != "use --token="+val+"\n" {
		t.Fatalf("the command received %q (%v), want the store's value", got, err)
	}
	stored, _ := json.Marshal(task)
	if strings.Contains(string(stored), val) || task.Message != "used ****" {
		t.Fatalf("the stored task holds the secret (message %q):\n%s", task.Message, stored)
	}
	e2 := newEnv(t, Config{Bindings: []Binding{b}, Secrets: mapSecrets{}})
	e2.put("tpl", src)
	if _, err := e2.c.Execute(t.Context(), ExecRequest{Procedure: "tpl"}); domain.ErrorCode(err) != domain.CodeInvalid || !strings.Contains(err.Error(), "api_token") {
		t.Fatalf("launch without the store secret: %v", err)
	}
}

// TestSecretIntoSubProcedureVars: a secret passed with "checker procedure
// execute --vars" goes only into a var the sub-procedure declares secret:
// true; into a plain one (whose task would store it in clear) the apicall
// is refused and no sub-task starts.
func TestSecretIntoSubProcedureVars(t *testing.T) {
	const val = "SUB-SECRET-321"
	e := newEnv(t, Config{Secrets: mapSecrets{"api_token": val}})
	e.put("child_plain", "vars:\n  x: {type: string, visibility: public}\nsteps:\n  s:\n    action:\n      log: \"got it\"\n")
	e.put("child_secret", "vars:\n  x: {type: string, secret: true, visibility: public}\nsteps:\n  s:\n    action:\n      log: \"got {{x}}\"\n")
	parent := func(child string) string {
		return "steps:\n  call:\n    action:\n      apicall: 'checker procedure execute --name " + child + " --vars ''{\"x\": \"{{ secret(\"api_token\") }}\"}'' --json yes'\n"
	}
	e.put("to_plain", parent("child_plain"))
	e.put("to_secret", parent("child_secret"))

	task := e.execWait("to_plain", nil)
	if task.Status != StatusFailure || !strings.Contains(task.RunError, `var "x" of procedure child_plain`) {
		t.Fatalf("a secret into a plain var: %s %q\n%s", task.Status, task.RunError, dumpLog(task))
	}
	task = e.execWait("to_secret", nil)
	if task.Status != StatusSuccess {
		t.Fatalf("a secret into a secret var: %s %q\n%s", task.Status, task.RunError, dumpLog(task))
	}
	all, err := e.store.ListCheckerTasks(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, x := range all {
		b, _ := json.Marshal(x)
		if strings.Contains(string(b), val) {
			t.Errorf("task %s of %s holds the secret: %s", x.ID, x.Procedure, b)
		}
		if x.Procedure == "child_plain" {
			t.Errorf("the refused apicall started %s", x.ID)
		}
		if x.Procedure == "child_secret" {
			children++
		}
	}
	if children != 1 {
		t.Errorf("%d tasks of child_secret, want 1", children)
	}
}
