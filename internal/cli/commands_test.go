package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/cli"
)

// TestOutputFormats runs the catalog, token and audit commands against a
// real Keeper in the three output formats.
func TestOutputFormats(t *testing.T) {
	k := startKeeper(t)
	repo := catalogtest.NewRepo(t)
	commit := repo.Commit(catalogtest.MyService, "my-service")

	reg := k.ctl(t, "service", "register", "--name", "my-service", "--git", repo.Dir, "--ref", "master").must(t)
	for _, want := range []string{"Name:", "my-service", "Commit:", commit} {
		if !strings.Contains(reg.Stdout, want) {
			t.Errorf("service register output lacks %q:\n%s", want, reg.Stdout)
		}
	}

	// table: a header and aligned columns.
	tbl := k.ctl(t, "service", "list").must(t)
	lines := strings.Split(strings.TrimRight(tbl.Stdout, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("service list table:\n%s", tbl.Stdout)
	}
	for _, col := range []string{"REF", "COMMIT", "GIT", "UPDATED"} {
		i := strings.Index(lines[0], col)
		if i < 0 || len(lines[1]) <= i || lines[1][i-1] != ' ' || lines[1][i] == ' ' {
			t.Errorf("column %s not aligned:\n%s", col, tbl.Stdout)
		}
	}

	// json: the API's objects.
	js := k.ctl(t, "service", "list", "-o", "json").must(t)
	var svcs []map[string]any
	if err := json.Unmarshal([]byte(js.Stdout), &svcs); err != nil {
		t.Fatalf("service list -o json: %v\n%s", err, js.Stdout)
	}
	if len(svcs) != 1 || svcs[0]["name"] != "my-service" || svcs[0]["commit"] != commit {
		t.Fatalf("service list -o json: %v", svcs)
	}

	// yaml: the same object, block style, keys in JSON order.
	ym := k.ctl(t, "service", "show", "my-service", "-o", "yaml").must(t)
	var svc map[string]any
	if err := yaml.Unmarshal([]byte(ym.Stdout), &svc); err != nil {
		t.Fatalf("service show -o yaml: %v\n%s", err, ym.Stdout)
	}
	if svc["name"] != "my-service" || svc["ref"] != "master" || !strings.HasPrefix(ym.Stdout, "name: my-service\n") {
		t.Fatalf("service show -o yaml:\n%s", ym.Stdout)
	}

	// The checker's spelling, --name, is the same as the argument.
	if a, b := k.ctl(t, "service", "show", "--name", "my-service", "-o", "json").must(t), k.ctl(t, "service", "show", "my-service", "-o", "json").must(t); a.Stdout != b.Stdout {
		t.Errorf("--name and the argument differ:\n%s\n%s", a.Stdout, b.Stdout)
	}

	// Souls: none yet; an empty list is [] in JSON and a header in tables.
	if r := k.ctl(t, "souls", "list", "-o", "json").must(t); strings.TrimSpace(r.Stdout) != "[]" {
		t.Errorf("souls list -o json with no souls: %q", r.Stdout)
	}
	if r := k.ctl(t, "souls", "list").must(t); !strings.HasPrefix(r.Stdout, "SID") {
		t.Errorf("souls list: %q", r.Stdout)
	}

	// Tokens: -q prints the token alone; it works; revoke ends it.
	tokJSON := k.ctl(t, "token", "create", "--ttl", "1h", "--description", "test", "-o", "json").must(t)
	var issued apitypes.IssuedToken
	if err := json.Unmarshal([]byte(tokJSON.Stdout), &issued); err != nil || issued.ID == "" || issued.Token == "" {
		t.Fatalf("token create -o json: %v\n%s", err, tokJSON.Stdout)
	}
	quiet := k.ctl(t, "token", "create", "-q").must(t)
	if !regexp.MustCompile(`^[\w-]+\.[\w-]+\.[\w-]+\n$`).MatchString(quiet.Stdout) {
		t.Errorf("token create -q: %q", quiet.Stdout)
	}
	who := ctl(t, nil, "", "--keeper", k.URL, "--token", issued.Token, "whoami").must(t)
	if !strings.Contains(who.Stdout, "root") || !strings.Contains(who.Stdout, "admin") {
		t.Errorf("whoami:\n%s", who.Stdout)
	}
	k.ctl(t, "token", "revoke", issued.ID).must(t)
	if r := ctl(t, nil, "", "--keeper", k.URL, "--token", issued.Token, "whoami"); r.Code != 1 || !strings.Contains(r.Stderr, "401") {
		t.Errorf("whoami with a revoked token: exit %d\n%s", r.Code, r.Stderr)
	}

	// Archons and join tokens.
	arch := k.ctl(t, "archon", "create", "alice", "--role", "viewer", "-o", "json").must(t)
	var created apitypes.CreatedArchon
	if err := json.Unmarshal([]byte(arch.Stdout), &created); err != nil || created.Archon.Role != "viewer" || created.Token.Token == "" {
		t.Fatalf("archon create: %v\n%s", err, arch.Stdout)
	}
	jt := k.ctl(t, "join-token", "create", "--covens", "dev,web", "--ttl", "2h").must(t)
	if !strings.Contains(jt.Stdout, "dev,web") || !strings.Contains(jt.Stdout, "Token:") {
		t.Errorf("join-token create:\n%s", jt.Stdout)
	}
	// It suggests the install.sh line with the token in sh's environment
	// (off every command line), not soul run --join-token.
	if !strings.Contains(jt.Stdout, k.URL+"/install.sh || echo exit 1; } | SOUL_JOIN_TOKEN='SSJ1.") || strings.Contains(jt.Stdout, "--join-token") {
		t.Errorf("join-token create, want the install.sh line with the token in the environment:\n%s", jt.Stdout)
	}

	// A viewer may read but not change: 403 is an operation failure.
	if r := ctl(t, nil, "", "--keeper", k.URL, "--token", created.Token.Token, "join-token", "create", "--covens", "x"); r.Code != 1 || !strings.Contains(r.Stderr, "403 forbidden") {
		t.Errorf("viewer join-token create: exit %d\n%s", r.Code, r.Stderr)
	}

	// The audit log saw all of it, newest first.
	aud := k.ctl(t, "audit", "list", "--limit", "50", "-o", "json").must(t)
	var entries []map[string]any
	if err := json.Unmarshal([]byte(aud.Stdout), &entries); err != nil {
		t.Fatal(err)
	}
	actions := map[string]bool{}
	for _, e := range entries {
		actions[e["action"].(string)] = true
	}
	for _, a := range []string{"POST /v1/services", "POST /v1/tokens", "POST /v1/archons", "POST /v1/join-tokens"} {
		if !actions[a] {
			t.Errorf("audit list lacks %s: %v", a, actions)
		}
	}
	if r := k.ctl(t, "audit", "list").must(t); !strings.HasPrefix(r.Stdout, "TIME") {
		t.Errorf("audit list table:\n%s", r.Stdout)
	}
}

// TestExitCodesAndErrors checks the exit code contract and how API errors
// are rendered, including a 400 with the DSL's file:line:col problems.
func TestExitCodesAndErrors(t *testing.T) {
	k := startKeeper(t)
	bad := catalogtest.NewRepo(t)
	bad.Commit(map[string]string{
		"service.yml": "name: broken\n",
		"scenario/restart/main.yml": `tasks:
  - name: probe
    module: core.exec.run
    register: role
    params:
      command: "redis-cli role"
  - name: restart
    module: core.service.restarted
    onchange: [role]
    serial: 0
    params:
      name: redis-server
`,
	}, "broken")
	good := catalogtest.NewRepo(t)
	good.Commit(catalogtest.MyService, "ok")

	cases := []struct {
		name    string
		args    []string
		code    int
		stderrs []string
	}{
		{"unknown command", []string{"frobnicate"}, 2, []string{"unknown command"}},
		{"unknown flag", []string{"souls", "list", "--frob"}, 2, []string{"unknown flag"}},
		{"missing required flag", []string{"service", "register", "x"}, 2, []string{`"git" not set`}},
		{"bad output format", []string{"souls", "list", "-o", "xml"}, 2, []string{`unknown output format "xml"`}},
		{"name twice", []string{"service", "show", "a", "--name", "b"}, 2, []string{"give the name once"}},
		{"exclusive flags", []string{"incarnation", "run", "x", "--scenario", "s", "--watch", "-q"}, 2, []string{"[quiet watch]"}},
		{"bad input JSON", []string{"incarnation", "create", "x", "--service", "s", "--input", "{"}, 2, []string{"--input must be a JSON object"}},
		{"invalid service is a validation error", []string{"service", "register", "broken", "--git", bad.Dir, "--ref", "master"}, 2,
			[]string{"[400 invalid]", "scenario/restart/main.yml:9:5: ", "scenario/restart/main.yml:10:13: "}},
		{"unknown ref is 422", []string{"service", "register", "x", "--git", good.Dir, "--ref", "v9"}, 2, []string{"[422 unprocessable]"}},
		{"not found fails", []string{"service", "show", "nope"}, 1, []string{"[404 not_found]"}},
		{"unknown soul fails", []string{"souls", "show", "ghost"}, 1, []string{"[404 not_found]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := k.ctl(t, tc.args...)
			if r.Code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, tc.code, r.Stdout, r.Stderr)
			}
			for _, s := range tc.stderrs {
				if !strings.Contains(r.Stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.Stderr)
				}
			}
		})
	}

	// Each problem of the invalid service is on its own line, as
	// file:line:col: message.
	r := k.ctl(t, "service", "register", "broken", "--git", bad.Dir, "--ref", "master")
	problem := regexp.MustCompile(`^scenario/restart/main\.yml:\d+:\d+: \S`)
	n := 0
	for _, l := range strings.Split(r.Stderr, "\n") {
		if problem.MatchString(l) {
			n++
		}
	}
	if n < 2 {
		t.Errorf("want the problems one per line:\n%s", r.Stderr)
	}

	t.Run("no keeper", func(t *testing.T) {
		r := ctl(t, nil, "", "souls", "list")
		if r.Code != 2 || !strings.Contains(r.Stderr, "no Keeper") {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	})
	t.Run("no token", func(t *testing.T) {
		r := ctl(t, nil, "", "--keeper", k.URL, "souls", "list")
		if r.Code != 2 || !strings.Contains(r.Stderr, "no token") {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	})
	t.Run("bad token", func(t *testing.T) {
		r := ctl(t, nil, "", "--keeper", k.URL, "--token", "nope", "souls", "list")
		if r.Code != 1 || !strings.Contains(r.Stderr, "[401 unauthorized]") {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	})
	t.Run("unreachable keeper", func(t *testing.T) {
		r := ctl(t, nil, "", "--keeper", "http://127.0.0.1:1", "--token", "x", "souls", "list")
		if r.Code != 1 || !strings.Contains(r.Stderr, "unreachable") {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	})
}

// TestExec is the Checker's way in: commands return decoded JSON, errors
// keep their API error.
func TestExec(t *testing.T) {
	k := startKeeper(t)
	c := k.client(t)
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "ok")

	v, err := cli.Exec(ctx, c, []string{"service", "register", "--name", "my-service", "--git", repo.Dir, "--ref", "master", "-o", "table"})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(map[string]any); !ok || m["name"] != "my-service" {
		t.Fatalf("service register: %#v", v)
	}
	v, err = cli.Exec(ctx, c, []string{"service", "list"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := v.([]any); !ok || len(l) != 1 {
		t.Fatalf("service list: %#v", v)
	}
	v, err = cli.Exec(ctx, c, []string{"souls", "list"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := v.([]any); !ok || len(l) != 0 {
		t.Fatalf("souls list: %#v", v)
	}
	_, err = cli.Exec(ctx, c, []string{"service", "show", "--name", "nope"})
	var ae *apiclient.APIError
	if !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("service show nope: %v", err)
	}
	if _, err := cli.Exec(ctx, c, []string{"login"}); err == nil {
		t.Fatal("login ran in Exec")
	}
}

// TestExecReadsNoLocalFiles: a procedure's apicall runs inside the Keeper,
// so the forms that read a file (@file values, --file, a repository
// directory) would read the Keeper's host — its database, its keys — with
// the Keeper's rights. Exec refuses them; the same commands from a shell
// still read files.
func TestExecReadsNoLocalFiles(t *testing.T) {
	k := startKeeper(t)
	c := k.client(t)
	ctx := context.Background()
	dir := t.TempDir()
	leak := filepath.Join(dir, "leak.json")
	if err := os.WriteFile(leak, []byte(`{"database_url": "postgres://keeper:hunter2@db/keeper"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	proc := filepath.Join(dir, "proc.yaml")
	if err := os.WriteFile(proc, []byte("steps:\n  s:\n    action:\n      log: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "ok")
	for _, argv := range [][]string{
		{"incarnation", "run", "--name", "x", "--scenario", "create", "--input", "@" + leak},
		{"incarnation", "create", "--name", "x", "--service", "s", "--covens", "c", "--essence", "@" + leak},
		{"checker", "procedure", "create", "--name", "leaked", "--file", proc},
		{"checker", "procedure", "execute", "--name", "leaked", "--vars", "@" + leak},
		{"checker", "procedure", "schedule", "add", "--name", "leaked", "--cron", "@hourly", "--vars", "@" + leak},
		{"scenario", "validate", repo.Dir},
		{"scenario", "test", repo.Dir},
	} {
		_, err := cli.Exec(ctx, c, argv)
		if err == nil || !strings.Contains(err.Error(), "files of the Keeper's host") {
			t.Errorf("%q: %v, want refused for reading local files", argv, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error shows the file: %v", argv, err)
		}
	}
	if _, err := c.GetProcedure(ctx, "leaked"); err == nil {
		t.Error("a procedure was created from a file of the keeper's host")
	}
	// From a shell, the same forms read files.
	if r := k.ctl(t, "checker", "procedure", "create", "--name", "from-shell", "--file", proc); r.Code != 0 {
		t.Errorf("procedure create --file from a shell: exit %d: %s", r.Code, r.Stderr)
	}
}

// TestExecIssuesNoTokens: a token issued by a procedure would be the
// Checker's and would be kept in the task's step log, which viewers read.
func TestExecIssuesNoTokens(t *testing.T) {
	k := startKeeper(t)
	_, err := cli.Exec(context.Background(), k.client(t), []string{"token", "create", "--ttl", "1h"})
	if err == nil || !strings.Contains(err.Error(), "not available in procedures") {
		t.Fatalf("token create in Exec: %v, want refused", err)
	}
	if r := k.ctl(t, "token", "create", "--ttl", "1h", "-q"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "ey") {
		t.Fatalf("token create from a shell: exit %d %q %s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestCompletion: shell completion scripts, and names completed from the
// Keeper.
func TestCompletion(t *testing.T) {
	k := startKeeper(t)
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "ok")
	k.ctl(t, "service", "register", "my-service", "--git", repo.Dir, "--ref", "master").must(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := k.ctl(t, "completion", sh).must(t); !strings.Contains(r.Stdout, "soulctl") {
			t.Errorf("completion %s: %.200s", sh, r.Stdout)
		}
	}
	r := k.ctl(t, "__complete", "service", "show", "my").must(t)
	if !strings.HasPrefix(r.Stdout, "my-service\n:4\n") {
		t.Errorf("service names: %q", r.Stdout)
	}
	r = k.ctl(t, "__complete", "incarnation", "create", "x", "--service", "").must(t)
	if !strings.HasPrefix(r.Stdout, "my-service\n") {
		t.Errorf("--service names: %q", r.Stdout)
	}
	// No Keeper: nothing, quietly.
	if r := ctl(t, nil, "", "__complete", "service", "show", ""); r.Code != 0 || !strings.HasPrefix(r.Stdout, ":4\n") {
		t.Errorf("completion without a keeper: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

// Audit finding (issue 31): `service register` and `service update` show
// the shell-injection warning `scenario validate` prints, with
// file:line:col, and the JSON output carries it.
func TestServiceRegisterShowsWarnings(t *testing.T) {
	k := startKeeper(t)
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "my-service")
	repo.Commit(map[string]string{"scenario/greet/main.yml": catalogtest.ShellWarningScenario}, "greet")
	want := "scenario/greet/main.yml:6:38: warning: " + catalogtest.ShellWarningText

	reg := k.ctl(t, "service", "register", "--name", "my-service", "--git", repo.Dir, "--ref", "master").must(t)
	if !strings.Contains(reg.Stdout, "Warning:") || !strings.Contains(reg.Stdout, want) {
		t.Fatalf("service register output lacks the warning %q:\n%s", want, reg.Stdout)
	}
	upd := k.ctl(t, "service", "update", "my-service", "--ref", "master").must(t)
	if !strings.Contains(upd.Stdout, want) {
		t.Fatalf("service update output lacks the warning:\n%s", upd.Stdout)
	}
	js := k.ctl(t, "-o", "json", "service", "show", "my-service").must(t)
	if !strings.Contains(js.Stdout, `"warnings"`) || !strings.Contains(js.Stdout, `"line": 6`) {
		t.Fatalf("service show -o json lacks the warnings:\n%s", js.Stdout)
	}
}
