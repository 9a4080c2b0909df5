package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// sealedService keeps a database password derived from a store secret in
// incarnation.state under a key state_schema declares secret: true, and
// later runs use it.
var sealedService = map[string]string{
	"service.yml": `name: vault
state_schema:
  type: object
  properties:
    db_password: {type: string, secret: true}
    db_pin: {type: integer, secret: true}
    done: {type: string}
    pw_copy: {type: string}
`,
	"scenario/create/main.yml": `
tasks: []
state_changes:
  sets:
    db_password: "${ b64enc(secret(\"db_pw\")) }"
    db_pin: "${ int(secret(\"db_pin\")) }"
    done: "yes"
`,
	"scenario/use/main.yml": `
tasks:
  - name: write conf
    module: core.file.present
    params: {path: /etc/app.conf, content: "pw=${ state.db_password } pin=${ state.db_pin }\n"}
  - name: shout
    module: core.test.echo
    params: {message: "${ upper(state.db_password) }"}
state_changes:
  sets:
    done: "again"
`,
	"scenario/copy/main.yml": `
tasks: []
state_changes:
  sets:
    pw_copy: "${ state.db_password.substring(1) }"
`,
}

// TestSecretStateKeys: a value derived from a secret is committed into a
// state key declared secret: true (SPEC §10.2) — sealed in the database,
// **** in the API and the history — and later runs read the real value as
// state.<key>, tainted: the host gets it, every viewer sees ****, and
// copying it into a key that is not secret is refused.
func TestSecretStateKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const dbpw, pin = "Vault-Db-Pw-8813", "40917"
	for n, v := range map[string]string{"db_pw": dbpw, "db_pin": pin} {
		if err := e.secrets.Set(ctx, n, v, "admin"); err != nil {
			t.Fatal(err)
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(dbpw))
	repo := catalogtest.NewRepo(t)
	repo.Commit(sealedService, "v1")
	if _, err := e.client(auth.RoleAdmin).RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "vault", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.UpsertSoul(ctx, store.Soul{SID: "h1", Status: store.SoulConnected, Covens: []string{"vault"}}); err != nil {
		t.Fatal(err)
	}
	e.sim.AddHost(dispatch.SimHost{SID: "h1"})
	// The host answers as core.file.present and core.test.echo do: a diff
	// of the content, the message back.
	e.sim.SetStubs([]dispatch.Stub{
		{Task: "write conf", Results: []domain.Result{{Changed: true, Diff: "+pw=" + b64 + " pin=" + pin + "\n"}}},
		{Task: "shout", Results: []domain.Result{{Stdout: strings.ToUpper(b64), Data: map[string]any{"message": strings.ToUpper(b64)}}}},
	})
	op, viewer := e.tokens[auth.RoleOperator], e.tokens[auth.RoleViewer]
	run := func(path, body string) store.Run {
		t.Helper()
		st, b := e.do("POST", path, op, body)
		if st != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", path, st, b)
		}
		var acc apitypes.Accepted
		if err := json.Unmarshal(b, &acc); err != nil {
			t.Fatal(err)
		}
		return e.waitRun(acc.ApplyID)
	}
	if r := run("/v1/incarnations", `{"name":"vault-dev","service":"vault","covens":["vault"]}`); r.Status != store.RunSucceeded {
		t.Fatalf("create: %s %s", r.Status, r.Error)
	}
	inc, err := e.st.GetIncarnation(ctx, "vault-dev")
	if err != nil {
		t.Fatal(err)
	}
	if inc.State["db_password"] != "****" || inc.State["db_pin"] != "****" || inc.State["done"] != "yes" || len(inc.SealedState) != 2 {
		t.Fatalf("stored state %v, sealed keys %d", inc.State, len(inc.SealedState))
	}

	use := run("/v1/incarnations/vault-dev/runs", `{"scenario":"use"}`)
	if use.Status != store.RunSucceeded {
		t.Fatalf("use: %s %s", use.Status, use.Error)
	}
	var delivered strings.Builder
	for _, c := range e.sim.Calls() {
		b, _ := json.Marshal(c.Params)
		delivered.Write(b)
	}
	for _, want := range []string{"pw=" + b64 + " pin=" + pin, strings.ToUpper(b64)} {
		if !strings.Contains(delivered.String(), want) {
			t.Fatalf("the host did not receive %q: %s", want, delivered.String())
		}
	}

	var seen strings.Builder
	for _, p := range []string{"/v1/runs/" + use.ID, "/v1/incarnations/vault-dev", "/v1/incarnations/vault-dev/history", "/v1/runs?incarnation=vault-dev"} {
		st, b := e.do("GET", p, viewer, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, st, b)
		}
		seen.Write(b)
	}
	out := seen.String()
	if !strings.Contains(out, `"db_password":"****"`) || !strings.Contains(out, `"db_pin":"****"`) || !strings.Contains(out, `"done":"again"`) {
		t.Fatalf("the state does not show the secret keys as ****:\n%s", out)
	}
	for _, v := range append(forms(dbpw), append(forms(b64), pin)...) {
		if strings.Contains(out, v) {
			t.Errorf("a viewer reads %q (a form of a secret):\n%s", v, out)
		}
	}
	// The sealed values survived the second commit, which did not set them.
	if inc, err = e.st.GetIncarnation(ctx, "vault-dev"); err != nil || len(inc.SealedState) != 2 {
		t.Fatalf("sealed state after use: %v %v", inc.SealedState, err)
	}

	// Derived from a secret state key into a key that is not secret:
	// refused at commit, nothing committed.
	if r := run("/v1/incarnations/vault-dev/runs", `{"scenario":"copy"}`); r.Status == store.RunSucceeded || !strings.Contains(r.Error, "pw_copy") {
		t.Fatalf("copy: %s %s", r.Status, r.Error)
	}
	if inc, err = e.st.GetIncarnation(ctx, "vault-dev"); err != nil || inc.State["pw_copy"] != nil {
		t.Fatalf("state after copy: %v %v", inc.State, err)
	}

	db, _ := os.ReadFile(e.dbFile)
	wal, _ := os.ReadFile(e.dbFile + "-wal")
	for _, v := range append(forms(dbpw), forms(b64)...) {
		if strings.Contains(string(db)+string(wal), v) {
			t.Errorf("the database file holds %q", v)
		}
	}
}
