package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/store"
)

// vaultService declares secret inputs under names that do not look
// sensitive, so only the scenario's secret: true says they are.
var vaultService = map[string]string{
	"service.yml": "name: vault\n",
	"scenario/create/main.yml": `
input:
  unseal: {type: string, secret: true}
  replicas: {type: integer, default: 1}
tasks:
  - name: unseal
    module: core.test.echo
    params: {message: "unsealing with ${ input.unseal }"}
`,
	"scenario/rotate/main.yml": `
input:
  next_key: {type: string, secret: true}
  replicas: {type: integer, default: 1}
tasks:
  - name: rotate
    module: core.test.echo
    params: {message: "rotating to ${ input.next_key }"}
`,
}

// TestSecretInputsNeverReachTheAuditLog: the audit entry of a create or a
// run keeps what was asked but masks the values of secret inputs, whether
// the call succeeded or was refused.
func TestSecretInputsNeverReachTheAuditLog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(vaultService, "v1")
	if _, err := e.client(auth.RoleAdmin).RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "vault", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.UpsertSoul(ctx, store.Soul{SID: "v1", Status: store.SoulConnected, Covens: []string{"vault"}}); err != nil {
		t.Fatal(err)
	}
	e.sim.AddHost(dispatch.SimHost{SID: "v1"})
	op := e.tokens[auth.RoleOperator]
	const createSecret, runSecret, refusedSecret = "open-sesame-1", "open-sesame-2", "open-sesame-3"

	st, body := e.do("POST", "/v1/incarnations", op, `{"name":"vault-prod","service":"vault","covens":["vault"],"input":{"unseal":"`+createSecret+`"}}`)
	if st != http.StatusAccepted {
		t.Fatalf("create: %d %s", st, body)
	}
	var acc apitypes.Accepted
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	e.waitRun(acc.ApplyID)
	st, body = e.do("POST", "/v1/incarnations/vault-prod/runs", op, `{"scenario":"rotate","input":{"next_key":"`+runSecret+`","replicas":3}}`)
	if st != http.StatusAccepted {
		t.Fatalf("run: %d %s", st, body)
	}
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	e.waitRun(acc.ApplyID)
	// Refused: a wrongly typed input, and an unknown scenario.
	if st, body = e.do("POST", "/v1/incarnations/vault-prod/runs", op, `{"scenario":"rotate","input":{"next_key":"`+refusedSecret+`","replicas":"many"}}`); st != http.StatusBadRequest {
		t.Fatalf("bad run: %d %s", st, body)
	}
	if st, body = e.do("POST", "/v1/incarnations/vault-prod/runs", op, `{"scenario":"rotte","input":{"next_key":"`+refusedSecret+`"}}`); st != http.StatusBadRequest {
		t.Fatalf("unknown scenario: %d %s", st, body)
	}
	if st, body = e.do("POST", "/v1/incarnations/vault-prod/runs", op, `{"scenario":"rotate","input":{"next_key":"`+refusedSecret+`"},"chek":true}`); st != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", st, body)
	}
	if st, body = e.do("POST", "/v1/incarnations", op, `{"name":"vault-2","service":"vault","covens":["vault"],"input":{"unseal":"`+refusedSecret+`"},"essense":{}}`); st != http.StatusBadRequest {
		t.Fatalf("unknown field in create: %d %s", st, body)
	}

	es, err := e.client(auth.RoleAdmin).ListAudit(ctx, apitypes.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(es)
	for _, s := range []string{createSecret, runSecret, refusedSecret} {
		if strings.Contains(string(all), s) {
			t.Errorf("the audit log holds the secret %q: %s", s, all)
		}
	}
	// What was asked is still there.
	var sawRun bool
	for _, a := range es {
		if a.Summary["status"] == float64(http.StatusBadRequest) {
			if in, _ := a.Summary["input"].(map[string]any); len(in) == 0 || in["next_key"] != "****" && in["unseal"] != "****" {
				t.Errorf("audit summary of a refused call = %v, want the input's keys with masked values", a.Summary)
			}
		}
		if a.Action != "POST /v1/incarnations/{name}/runs" || a.Summary["status"] != float64(http.StatusAccepted) {
			continue
		}
		sawRun = true
		in, _ := a.Summary["input"].(map[string]any)
		if in["next_key"] != "****" || in["replicas"] != float64(3) || a.Summary["scenario"] != "rotate" {
			t.Errorf("audit summary of the run = %v", a.Summary)
		}
	}
	if !sawRun {
		t.Errorf("no audit entry of the accepted run: %s", all)
	}
}
