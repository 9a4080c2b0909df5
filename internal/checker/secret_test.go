package checker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secretProc = `vars:
  token: {type: string, visibility: public, secret: true}
  user: {type: string, visibility: public, default: admin}
  fetched: {type: string, secret: true}
steps:
  login:
    action:
      apicall: vault login --token {{token}} --user {{user}}
      parse: [{filter: new_token, op: store, var: fetched}]
      log: "logged in as {{user}} with {{token}}, got {{fetched}}"
  use:
    action:
      apicall: vault use {{fetched}}
      log: "used {{fetched}}"
  compare:
    conditions:
      - const: "{{token}}"
        expect: [{filter: '@', op: '>', value: "x"}]
`

// TestSecretVarsAreMaskedInTheStoredTask: a secret var passed at launch and
// a secret var a parse stored reach the bound command with their real
// values, but the stored task (vars, step log, task_message, run_error)
// shows **** in their place.
func TestSecretVarsAreMaskedInTheStoredTask(t *testing.T) {
	const token, fresh = "s3cr3t-launch-42", "fresh-9f8e7d"
	calls := filepath.Join(t.TempDir(), "calls")
	script := fmt.Sprintf(`printf '%%s\n' "$*" >> %q; echo "vault saw $*" >&2; printf '{"new_token": "%s", "echo": "%%s"}' "$*"`, calls, fresh)
	b := Binding{Prefix: "vault", Executable: "/bin/sh", Args: []string{"-c", script, "vault"}}
	e := newEnv(t, Config{Bindings: []Binding{b}})
	e.put("p", secretProc)

	task := e.execWait("p", map[string]any{"token": token})
	if task.Status != StatusFailure || !strings.Contains(task.RunError, "****") {
		t.Fatalf("status %s, run_error %q; want FAILURE naming **** (the > on strings)\n%s", task.Status, task.RunError, dumpLog(task))
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if want := "login --token " + token + " --user admin\nuse " + fresh + "\n"; string(got) != want {
		t.Errorf("the command received %q, want %q", got, want)
	}

	stored, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{token, fresh} {
		if strings.Contains(string(stored), secret) {
			t.Errorf("the stored task holds secret %q:\n%s", secret, stored)
		}
	}
	if task.Vars["token"] != "****" || task.Vars["user"] != "admin" {
		t.Errorf("stored vars %v, want token **** and user admin", task.Vars)
	}
	if task.Message != "used ****" {
		t.Errorf("task_message %q, want %q", task.Message, "used ****")
	}
	wantLog := []string{
		"login: apicall: vault login --token **** --user admin",
		"use: apicall: vault use ****",
	}
	if diff := strings.Join(logLines(task, LogAPICall), "\n"); diff != strings.Join(wantLog, "\n") {
		t.Errorf("apicall log lines:\n%s\nwant:\n%s", diff, strings.Join(wantLog, "\n"))
	}
	if msgs := strings.Join(logLines(task, LogMessage), "\n"); !strings.Contains(msgs, "logged in as admin with ****, got ****") {
		t.Errorf("log lines:\n%s", msgs)
	}

	// Execute's answer (what the API returns at launch) is masked too.
	tasks, err := e.c.Execute(t.Context(), ExecRequest{Procedure: "p", Vars: map[string]any{"token": token}})
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].Vars["token"] != "****" {
		t.Errorf("Execute returned vars %v", tasks[0].Vars)
	}
	if _, err := e.c.Wait(t.Context(), tasks[0].ID); err != nil {
		t.Fatal(err)
	}
	// A launch value of the wrong type is not echoed back.
	_, err = e.c.Execute(t.Context(), ExecRequest{Procedure: "p", Vars: map[string]any{"token": map[string]any{"k": token}}})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("Execute with a bad secret value: %v", err)
	}
}

// TestSecretVarsChangeNothingElse: without secret vars a task stores its
// values as before.
func TestSecretVarsChangeNothingElse(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("p", "vars:\n  x: {type: string, visibility: public}\nsteps:\n  s:\n    action:\n      log: \"x is {{x}}\"\n")
	task := e.execWait("p", map[string]any{"x": "plain"})
	if task.Status != StatusSuccess || task.Message != "x is plain" || task.Vars["x"] != "plain" {
		t.Fatalf("task %+v", task)
	}
}

func TestParseSecretVar(t *testing.T) {
	p, err := ParseProcedure("p", []byte(secretProc))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Var("token").Secret || !p.Var("fetched").Secret || p.Var("user").Secret {
		t.Errorf("secret flags: token %v fetched %v user %v", p.Var("token").Secret, p.Var("fetched").Secret, p.Var("user").Secret)
	}
	for src, want := range map[string]string{
		"vars:\n  a: {type: string, secret: yes}\nsteps: {}\n":      "secret must be true or false",
		"vars:\n  a: {type: string, secret: \"true\"}\nsteps: {}\n": "secret must be true or false",
		"vars:\n  a: {type: boolean, secret: true}\nsteps: {}\n":    "a boolean var cannot be secret",
		"vars:\n  a: {type: string, sekret: true}\nsteps: {}\n":     "sekret",
	} {
		_, err := ParseProcedure("p", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", src, err, want)
		}
	}
}
