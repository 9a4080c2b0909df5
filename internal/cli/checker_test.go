package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// checkerKeeper is a real Operator API with a Checker on SQLite, and an
// operator token for it.
type checkerKeeper struct {
	url, token, config string
}

func newCheckerKeeper(t *testing.T) checkerKeeper {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := checker.New(checker.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	s, err := api.New(api.Config{Store: st, Auth: a, Checker: ck})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	ar, err := a.CreateArchon(ctx, "op", auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.IssueToken(ctx, ar, time.Hour, "test")
	if err != nil {
		t.Fatal(err)
	}
	return checkerKeeper{url: srv.URL, token: tok.Token, config: filepath.Join(dir, "none.yaml")}
}

// soulctl runs the command tree against k and returns exit code, stdout
// and stderr.
func (k checkerKeeper) soulctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	g := &Globals{Getenv: func(string) string { return "" }, Stdin: strings.NewReader("")}
	full := append([]string{"--keeper", k.url, "--token", k.token, "--config", k.config}, args...)
	code := run(context.Background(), g, full, &out, &errb)
	return code, out.String(), errb.String()
}

func seedFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "examples", "procedures", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckerProcedureCommands(t *testing.T) {
	k := newCheckerKeeper(t)

	code, _, stderr := k.soulctl(t, "checker", "procedure", "create", "vm_monitoring", "--file", seedFile(t, "vm_monitoring.yaml"))
	if code != 2 || !strings.Contains(stderr, "vm_monitoring:35:11:") || !strings.Contains(stderr, "`handler:` looks mis-indented") {
		t.Fatalf("unfixed seed: exit %d, stderr:\n%s", code, stderr)
	}
	if code, _, stderr := k.soulctl(t, "checker", "procedure", "create", "--name", "vm_monitoring", "--file", seedFile(t, "vm_monitoring.fixed.yaml")); code != 0 {
		t.Fatalf("fixed seed: exit %d: %s", code, stderr)
	}
	hello := filepath.Join(t.TempDir(), "hello.yaml")
	if err := os.WriteFile(hello, []byte("vars:\n  who: {type: string, visibility: public}\nsteps:\n  hi:\n    action:\n      log: \"hello\\n{{ who }}\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := k.soulctl(t, "checker", "procedure", "create", "hello", "-f", hello); code != 0 {
		t.Fatalf("create hello: exit %d: %s", code, stderr)
	}
	code, out, _ := k.soulctl(t, "checker", "procedure", "list")
	if code != 0 || !strings.Contains(out, "hello") || !strings.Contains(out, "vm_monitoring") {
		t.Errorf("list: exit %d:\n%s", code, out)
	}
	if code, out, _ := k.soulctl(t, "checker", "procedure", "show", "hello"); code != 0 || !strings.Contains(out, "log: \"hello\\n{{ who }}\"") {
		t.Errorf("show: exit %d:\n%s", code, out)
	}

	// --json yes prints the ids; a scalar var given an array fans out.
	code, out, stderr = k.soulctl(t, "checker", "procedure", "execute", "--name", "hello", "--vars", `{"who": ["ann", "bob"]}`, "--json", "yes", "--wait")
	if code != 0 {
		t.Fatalf("execute: exit %d: %s", code, stderr)
	}
	var ids []string
	if err := json.Unmarshal([]byte(out), &ids); err != nil || len(ids) != 2 {
		t.Fatalf("execute --json yes printed %q (%v)", out, err)
	}
	code, out, _ = k.soulctl(t, "checker", "task", "show", ids[0])
	for _, want := range []string{"Status:", "SUCCESS", "Step log:", "hello", "ann"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("task show: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	if code, out, _ := k.soulctl(t, "checker", "task", "list", "--procedure", "hello"); code != 0 || strings.Count(out, "hello") != 2 {
		t.Errorf("task list: exit %d:\n%s", code, out)
	}
	if code, _, stderr := k.soulctl(t, "checker", "procedure", "execute", "hello", "--vars", `{"nobody": 1}`); code != 2 || !strings.Contains(stderr, `no var "nobody"`) {
		t.Errorf("execute with an unknown var: exit %d: %s", code, stderr)
	}

	code, out, stderr = k.soulctl(t, "-o", "json", "checker", "procedure", "schedule", "add", "--name", "hello", "--vars", `{"who": "cron"}`, "--cron", "*/5 * * * *")
	var sc struct{ ID, Cron string }
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Cron != "*/5 * * * *" {
		t.Fatalf("schedule add: exit %d %q %s", code, out, stderr)
	}
	if code, out, _ := k.soulctl(t, "checker", "procedure", "schedule", "list"); code != 0 || !strings.Contains(out, sc.ID) {
		t.Errorf("schedule list: exit %d:\n%s", code, out)
	}
	if code, _, stderr := k.soulctl(t, "checker", "procedure", "delete", "hello"); code != 1 || !strings.Contains(stderr, "409") {
		t.Errorf("deleting a scheduled procedure: exit %d: %s", code, stderr)
	}
	if code, _, stderr := k.soulctl(t, "checker", "procedure", "schedule", "del", sc.ID); code != 0 {
		t.Errorf("schedule del: exit %d: %s", code, stderr)
	}
	if code, _, stderr := k.soulctl(t, "checker", "procedure", "delete", "hello"); code != 0 {
		t.Errorf("delete: exit %d: %s", code, stderr)
	}
}

func TestCheckerExecuteThroughExec(t *testing.T) {
	k := newCheckerKeeper(t)
	ctx := context.Background()
	cl, err := apiclient.New(k.url, k.token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutProcedure(ctx, "hello", "vars:\n  who: {type: string, visibility: public}\nsteps:\n  hi:\n    action:\n      log: \"{{ who }}\"\n"); err != nil {
		t.Fatal(err)
	}
	v, err := Exec(ctx, cl, []string{"checker", "procedure", "execute", "--name", "hello", "--vars", `{"who": ["a", "b", "c"]}`, "--json", "yes"})
	if ids, ok := v.([]any); err != nil || !ok || len(ids) != 3 {
		t.Fatalf("Exec: %#v, %v", v, err)
	}
	v, err = Exec(ctx, cl, []string{"checker", "procedure", "execute", "--name", "hello", "--vars", `{"who": "d"}`})
	tasks, ok := v.([]any)
	if err != nil || !ok || len(tasks) != 1 || tasks[0].(map[string]any)["task_id"] == "" {
		t.Fatalf("Exec without --json: %#v, %v", v, err)
	}
}
