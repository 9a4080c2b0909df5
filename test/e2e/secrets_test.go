package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// dbPassword is the database password kept in the Keeper's secret store:
// mixed case, so its upper-case form differs from it.
const dbPassword = "Pg-Db-Pass-7f3K9xQ2"

// dbconfService renders the store's database password into a config file
// on every member, keeps its base64 in a state key declared secret: true,
// and a second scenario writes that state value back out.
var dbconfService = map[string]string{
	"service.yml": `name: dbconf
state_schema:
  type: object
  properties:
    db_pw_b64: {type: string, secret: true}
    configured: {type: string}
`,
	"scenario/create/main.yml": `
tasks:
  - name: db config
    module: core.file.present
    params:
      path: /etc/dbconf.ini
      mode: "0600"
      content: "[db]\nhost = db.internal\npassword = ${ secret(\"db_password\") }\npassword_b64 = ${ b64enc(secret(\"db_password\")) }\nshout = ${ upper(secret(\"db_password\")) }\n"
state_changes:
  sets:
    db_pw_b64: "${ b64enc(secret(\"db_password\")) }"
    configured: "yes"
`,
	"scenario/verify/main.yml": `
tasks:
  - name: from state
    module: core.file.present
    params: {path: /etc/dbconf.b64, mode: "0600", content: "${ state.db_pw_b64 }\n"}
`,
}

// secretForms are the forms of a secret searched for: the value, its
// base64, hex, upper case and SHA-256 (hex).
func secretForms(v string) map[string]string {
	sum := sha256.Sum256([]byte(v))
	return map[string]string{
		"value": v, "base64": base64.StdEncoding.EncodeToString([]byte(v)), "hex": hex.EncodeToString([]byte(v)),
		"upper": strings.ToUpper(v), "sha256": hex.EncodeToString(sum[:]),
	}
}

// TestSecretsNeverLeak is issue 18's Done-when on lab hosts: a database
// password from the Keeper's secret store is rendered into a config file on
// three systemd hosts (real souls of the .deb, real Keeper process on
// SQLite), and neither it nor its base64, hex, upper case or SHA-256 is in
// the Keeper's data directory (the database file, its WAL), the Keeper's
// log, the run's API output, its SSE events, the history, the UI pages or
// the souls' journals.
func TestSecretsNeverLeak(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	c := newClusterOf(t, lab.FlavourSystemd, "e2e-secrets", 3, nil)
	ctx := t.Context()
	if _, err := c.api.SetSecret(ctx, "db_password", dbPassword); err != nil {
		t.Fatal(err)
	}
	repo := catalogtest.NewRepo(t)
	repo.Commit(dbconfService, "dbconf")
	if _, err := c.api.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "dbconf", Git: "file://" + repo.Dir, Ref: "master"}); err != nil {
		t.Fatalf("registering dbconf: %v", err)
	}

	var events strings.Builder
	acc, err := c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "db-e2e", Service: "dbconf", Covens: []string{coven}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	streamed := c.streamEvents(t, acc.ApplyID, &events)
	run := c.waitRunDone(t, acc.ApplyID)
	if run.Status != store.RunSucceeded {
		t.Fatalf("create run %s: %s", run.Status, run.Error)
	}
	<-streamed
	b64 := base64.StdEncoding.EncodeToString([]byte(dbPassword))
	want := "[db]\nhost = db.internal\npassword = " + dbPassword + "\npassword_b64 = " + b64 + "\nshout = " + strings.ToUpper(dbPassword) + "\n"
	for _, sid := range c.sids() {
		got, err := c.host(t, sid).ReadFile("/etc/dbconf.ini")
		if err != nil || string(got) != want {
			t.Fatalf("/etc/dbconf.ini on %s = %q (%v), want the password rendered", sid, got, err)
		}
	}
	verify, err := c.api.StartRun(ctx, "db-e2e", apitypes.StartRunRequest{Scenario: "verify"})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if r := c.waitRunDone(t, verify.ApplyID); r.Status != store.RunSucceeded {
		t.Fatalf("verify run %s: %s", r.Status, r.Error)
	}
	for _, sid := range c.sids() {
		if got, err := c.host(t, sid).ReadFile("/etc/dbconf.b64"); err != nil || string(got) != b64+"\n" {
			t.Fatalf("/etc/dbconf.b64 on %s = %q (%v), want the state's sealed value", sid, got, err)
		}
	}

	// Where a viewer, an operator or an admin with the files could look.
	places := map[string]string{"SSE events": events.String()}
	for _, p := range []string{"/v1/runs/" + acc.ApplyID, "/v1/runs/" + verify.ApplyID, "/v1/runs/" + acc.ApplyID + "/events",
		"/v1/incarnations/db-e2e", "/v1/incarnations/db-e2e/history", "/v1/runs?incarnation=db-e2e", "/v1/audit", "/v1/secrets"} {
		places["API "+p] = c.getPage(t, p, false)
	}
	for _, p := range []string{"/ui/", "/ui/incarnations", "/ui/incarnations/db-e2e", "/ui/runs", "/ui/runs/" + acc.ApplyID,
		"/ui/runs/" + acc.ApplyID + "/live", "/ui/runs/" + acc.ApplyID + "/events", "/ui/runs/" + verify.ApplyID, "/ui/services/dbconf"} {
		places["UI "+p] = c.getPage(t, p, true)
	}
	log, err := os.ReadFile(c.keeper.logPath)
	if err != nil {
		t.Fatal(err)
	}
	places["keeper log"] = string(log)
	err = filepath.WalkDir(c.keeper.dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		places["keeper data "+strings.TrimPrefix(path, c.keeper.dataDir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range c.sids() {
		out, _, err := c.host(t, sid).Exec(ctx, "journalctl --no-pager -o cat -u "+soulUnit)
		if err != nil {
			t.Fatal(err)
		}
		places["journal of the soul on "+sid] = out
	}
	if _, ok := places["keeper data /keeper.db"]; !ok {
		t.Fatalf("no keeper.db among the keeper's files: the search would prove nothing")
	}
	// The places show the run: the search is not over empty pages.
	for _, p := range []string{"API /v1/runs/" + acc.ApplyID, "UI /ui/runs/" + acc.ApplyID, "SSE events", "API /v1/incarnations/db-e2e"} {
		if !strings.Contains(places[p], "****") {
			t.Errorf("%s shows no masked value: the search would prove nothing\n%s", p, places[p])
		}
	}
	if !strings.Contains(places["UI /ui/runs/"+acc.ApplyID], "db config") {
		t.Errorf("the UI run page does not show the run's task:\n%s", places["UI /ui/runs/"+acc.ApplyID])
	}
	searched := 0
	for form, v := range secretForms(dbPassword) {
		for place, text := range places {
			searched++
			if strings.Contains(text, v) {
				t.Errorf("the password's %s (%s) is in %s", form, v, place)
			}
		}
	}
	t.Logf("searched %d places for 5 forms (%d searches, %d bytes) in %v; the whole test took %v",
		len(places), searched, totalLen(places), since(start), since(start))
}

func totalLen(m map[string]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// streamEvents reads the run's Server-Sent Events, as they come, into out
// until the stream ends; the channel is closed then.
func (c *cluster) streamEvents(t *testing.T, id string, out *strings.Builder) <-chan struct{} {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+c.keeper.addr+"/v1/runs/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET events: %s", resp.Status)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
	}()
	return done
}

// waitRunDone waits until run id has ended and returns it.
func (c *cluster) waitRunDone(t *testing.T, id string) apitypes.Run {
	t.Helper()
	var run apitypes.Run
	eventually(t, 2*time.Minute, "run "+id+" to end", func() error {
		r, err := c.api.GetRun(t.Context(), id)
		if err != nil {
			return err
		}
		run = r.Run
		switch run.Status {
		case store.RunSucceeded, store.RunFailed, store.RunAborted, store.RunCancelled:
			return nil
		}
		return fmt.Errorf("run %s is %s", id, run.Status)
	})
	return run
}

// getPage returns the body of a GET of path on the Keeper, with the first
// Archon's token as a bearer token (API) or in a UI session signed in with
// it.
func (c *cluster) getPage(t *testing.T, path string, ui bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.keeper.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ui {
		req.AddCookie(c.uiSession(t))
	} else {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	if !ui && !json.Valid(b) && !strings.HasSuffix(path, "/events") {
		t.Fatalf("GET %s: not JSON: %s", path, b)
	}
	return string(b)
}

// uiSession signs in to the Keeper's UI with the first Archon's token and
// returns the session cookie.
func (c *cluster) uiSession(t *testing.T) *http.Cookie {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm("http://"+c.keeper.addr+"/ui/login", url.Values{"token": {c.token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "soulstack_ui" && ck.Value != "" {
			return ck
		}
	}
	t.Fatalf("UI login: %s, no session cookie", resp.Status)
	return nil
}
