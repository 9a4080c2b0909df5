package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// evilService is the audit's M5/L9 reproduction: a secret input and a
// store secret transformed by CEL before they reach params and state.
var evilService = map[string]string{
	"service.yml": "name: evil\n",
	"scenario/create/main.yml": `
input:
  pw: {type: string, secret: true}
tasks:
  - name: write b64
    module: core.file.present
    params: {path: /srv/evil/pw.b64, content: "${ b64enc(input.pw) }\n"}
  - name: write upper
    module: core.file.present
    params: {path: /srv/evil/pw.up, content: "${ upper(input.pw) }"}
  - name: write conf
    module: core.file.present
    params: {path: /srv/evil/db.conf, content: "pw=${ input.pw }\n"}
  - name: write store secret
    module: core.file.present
    params: {path: /srv/evil/db.hex, content: "${ sha256(secret(\"db_pw\")) }/${ secret(\"db_pw\").lowerAscii() }"}
  - name: plain
    module: core.file.present
    params: {path: /srv/evil/plain, content: "nothing secret"}
state_changes:
  sets:
    done: "yes"
`,
	"scenario/leak/main.yml": `
input:
  pw: {type: string, secret: true}
tasks: []
state_changes:
  sets:
    pw_b64: "${ b64enc(input.pw) }"
`,
	"scenario/leakvar/main.yml": `
input:
  pw: {type: string, secret: true}
tasks: []
state_changes:
  sets:
    pw_upper: "${ vars.up }"
`,
	"scenario/leakvar/vars.yml": `
up: "${ upper(input.pw) }"
`,
	"scenario/unknown/main.yml": `
tasks:
  - name: use
    module: core.test.echo
    params: {message: "${ secret(\"nope\") }"}
`,
}

func forms(v string) []string {
	sum := sha256.Sum256([]byte(v))
	return []string{v, base64.StdEncoding.EncodeToString([]byte(v)), strings.ToUpper(v), strings.ToLower(v), hex.EncodeToString(sum[:]), hex.EncodeToString([]byte(v))}
}

// TestM5DerivedSecretsMasked reproduces audit M5: values computed from a
// secret input or a store secret by CEL (b64enc, upper, sha256, lower,
// concatenation) are masked in the run's results as every viewer reads
// them, while the souls receive the real values; committing one into
// incarnation.state is refused at run start (state_changes reading a
// secret) or at commit (through vars), and unknown store secrets are a
// validation error with file:line.
func TestM5DerivedSecretsMasked(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const pw, dbpw = "Hunter2-S3cr3t!", "Store-Db-Pw-5521"
	if err := e.secrets.Set(ctx, "db_pw", dbpw, "admin"); err != nil {
		t.Fatal(err)
	}
	repo := catalogtest.NewRepo(t)
	repo.Commit(evilService, "v1")
	if _, err := e.client(auth.RoleAdmin).RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "evil", Git: repo.Dir, Ref: "master"}); err != nil {
		var ae *apiclient.APIError
		errors.As(err, &ae)
		t.Fatalf("%v %s", err, ae.Details)
	}
	if err := e.st.UpsertSoul(ctx, store.Soul{SID: "h1", Status: store.SoulConnected, Covens: []string{"evil"}}); err != nil {
		t.Fatal(err)
	}
	e.sim.AddHost(dispatch.SimHost{SID: "h1"})
	if list, err := e.client(auth.RoleOperator).ListSecrets(ctx); err != nil || len(list) != 1 || !slices.Contains(list[0].UsedBy, "service/evil/create") {
		t.Fatalf("secret list does not say which scenario uses db_pw: %+v %v", list, err)
	}
	// The hosts answer as core.file.present does: a diff of the content
	// and its hash and size (audit L9).
	b64 := base64.StdEncoding.EncodeToString([]byte(pw))
	sum := sha256.Sum256([]byte("pw=" + pw + "\n"))
	dbsum := sha256.Sum256([]byte(dbpw))
	answer := func(task, content string) dispatch.Stub {
		s := sha256.Sum256([]byte(content))
		return dispatch.Stub{Task: task, Results: []domain.Result{{Changed: true, Diff: "+" + content,
			Data: map[string]any{"sha256": hex.EncodeToString(s[:]), "size": int64(len(content))}}}}
	}
	e.sim.SetStubs([]dispatch.Stub{
		answer("write b64", b64+"\n"), answer("write upper", strings.ToUpper(pw)), answer("write conf", "pw="+pw+"\n"),
		answer("write store secret", hex.EncodeToString(dbsum[:])+"/"+strings.ToLower(dbpw)), answer("plain", "nothing secret"),
	})
	op, viewer := e.tokens[auth.RoleOperator], e.tokens[auth.RoleViewer]

	st, body := e.do("POST", "/v1/incarnations", op, `{"name":"evil-dev","service":"evil","covens":["evil"],"input":{"pw":"`+pw+`"}}`)
	if st != http.StatusAccepted {
		t.Fatalf("create: %d %s", st, body)
	}
	var acc apitypes.Accepted
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun(acc.ApplyID); run.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	// The souls got the real values.
	var delivered strings.Builder
	for _, c := range e.sim.Calls() {
		b, _ := json.Marshal(c.Params)
		delivered.Write(b)
	}
	for _, want := range []string{b64, strings.ToUpper(pw), hex.EncodeToString(dbsum[:])} {
		if !strings.Contains(delivered.String(), want) {
			t.Fatalf("the host did not receive %q: %s", want, delivered.String())
		}
	}

	var seen strings.Builder
	for _, p := range []string{"/v1/runs/" + acc.ApplyID, "/v1/incarnations/evil-dev", "/v1/incarnations/evil-dev/history", "/v1/runs?incarnation=evil-dev"} {
		st, b := e.do("GET", p, viewer, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, st, b)
		}
		seen.Write(b)
	}
	out := seen.String()
	if !strings.Contains(out, "nothing secret") || !strings.Contains(out, "****") {
		t.Fatalf("the run's results do not show what they should:\n%s", out)
	}
	for _, v := range []string{pw, dbpw} {
		for _, f := range forms(v) {
			if strings.Contains(out, f) {
				t.Errorf("a viewer reads %q (a form of a secret) in:\n%s", f, out)
			}
		}
	}
	// L9: no hash or size of tainted content, and they stay for the rest.
	if strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Error("L9: the SHA-256 of the secret-bearing file is published")
	}
	plain := sha256.Sum256([]byte("nothing secret"))
	if !strings.Contains(out, hex.EncodeToString(plain[:])) {
		t.Error("the hash of content that holds no secret is gone too")
	}
	db, _ := os.ReadFile(e.dbFile)
	wal, _ := os.ReadFile(e.dbFile + "-wal")
	for _, v := range []string{pw, dbpw} {
		for _, f := range forms(v) {
			if strings.Contains(string(db)+string(wal), f) {
				t.Errorf("the database file holds %q", f)
			}
		}
	}

	// Committing a derived secret: refused at run start, with file:line.
	st, body = e.do("POST", "/v1/incarnations/evil-dev/runs", op, `{"scenario":"leak","input":{"pw":"`+pw+`"}}`)
	if st != http.StatusBadRequest || !strings.Contains(string(body), "main.yml") || !strings.Contains(string(body), "pw_b64") {
		t.Fatalf("leak: %d %s", st, body)
	}
	// An unknown store secret: a validation error naming the file and line.
	st, body = e.do("POST", "/v1/incarnations/evil-dev/runs", op, `{"scenario":"unknown"}`)
	if st != http.StatusBadRequest || !strings.Contains(string(body), "scenario/unknown/main.yml:5") || !strings.Contains(string(body), "nope") {
		t.Fatalf("unknown secret: %d %s", st, body)
	}
	// Through vars it is only seen at commit: the run fails, nothing is
	// committed.
	st, body = e.do("POST", "/v1/incarnations/evil-dev/runs", op, `{"scenario":"leakvar","input":{"pw":"`+pw+`"}}`)
	if st != http.StatusAccepted {
		t.Fatalf("leakvar: %d %s", st, body)
	}
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun(acc.ApplyID); run.Status == store.RunSucceeded || !strings.Contains(run.Error, "pw_upper") {
		t.Fatalf("leakvar run %s: %s", run.Status, run.Error)
	}
	st, b := e.do("GET", "/v1/incarnations/evil-dev", viewer, "")
	var inc store.Incarnation
	if err := json.Unmarshal(b, &inc); st != http.StatusOK || err != nil || strings.Contains(string(b), strings.ToUpper(pw)) || inc.State["pw_upper"] != nil || inc.State["done"] != "yes" {
		t.Fatalf("state after leakvar: %s", b)
	}
}
