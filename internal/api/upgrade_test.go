package api_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestUpgradeChecksTheFuture: an upgrade whose state_schema rejects the
// committed state is refused with the schema error; with a migration
// scenario it runs on the new commit and moves the incarnation there only
// if its state fits — a migration whose state does not fit leaves the
// incarnation on the old commit.
func TestUpgradeChecksTheFuture(t *testing.T) {
	e := newEnv(t)
	repo := e.fleet()
	ctx := context.Background()
	op := e.client(auth.RoleOperator)
	acc, err := op.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "w", Service: "web", Covens: []string{"web"}, Input: map[string]any{"banner": "managed"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRun(acc.ApplyID)
	old := e.incarnationRecord("w")

	// The new commit is validated, every scenario of it: one with an
	// unknown module is refused (with the file), with or without a
	// migration, and nothing changes.
	broken := maps.Clone(webService)
	broken["scenario/retire/main.yml"] = "tasks:\n  - name: retire\n    module: core.no.such\n"
	repo.Commit(broken, "broken scenario")
	for _, req := range []string{`{"ref":"master"}`, `{"ref":"master","migrate":"create"}`} {
		st, body := e.do("POST", "/v1/incarnations/w/upgrade", e.tokens[auth.RoleAdmin], req)
		if st < 400 || st >= 500 || !strings.Contains(string(body), "scenario/retire/main.yml") || !strings.Contains(string(body), "core.no.such") {
			t.Errorf("upgrade %s to a commit with an invalid scenario: %d %s", req, st, body)
		}
	}
	if inc := e.incarnationRecord("w"); inc.Commit != old.Commit || inc.ActiveRun != "" {
		t.Fatalf("an upgrade to an invalid commit changed the incarnation: %+v", inc)
	}

	v2 := maps.Clone(webService)
	v2["service.yml"] = `name: web
state_schema:
  type: object
  properties:
    banner: {type: string}
    schema: {type: integer}
  required: [banner, schema]
`
	v2["scenario/migrate/main.yml"] = `
state_changes:
  sets: {schema: 2}
tasks:
  - name: note the migration
    module: core.file.present
    params: {path: /etc/web-schema, content: "2"}
`
	// A value validation cannot type (from_json gives dyn): it fails the
	// schema only at commit.
	v2["scenario/bad-migrate/main.yml"] = `
state_changes:
  sets: {schema: "${ from_json('\"two\"') }"}
tasks: []
`
	v2["scenario/retire/main.yml"] = "tasks: []\n" // the broken one, fixed
	c2 := repo.Commit(v2, "v2")

	// The committed state {banner} lacks schema: refused, nothing changes.
	st, body := e.do("POST", "/v1/incarnations/w/upgrade", e.tokens[auth.RoleAdmin], `{"ref":"master"}`)
	ed := e.wantError("POST", "/v1/incarnations/{name}/upgrade", http.StatusUnprocessableEntity, "unprocessable", body, st)
	if !strings.Contains(ed.Message, "schema") || !strings.Contains(ed.Message, "migrate") {
		t.Errorf("refusal: %q", ed.Message)
	}
	if inc := e.incarnationRecord("w"); inc.Commit != old.Commit {
		t.Fatalf("a refused upgrade moved the commit to %s", inc.Commit)
	}

	// A migration whose state does not fit: the incarnation stays on the
	// old commit.
	if _, err := e.client(auth.RoleAdmin).UpgradeMigrate(ctx, "w", "master", "nope"); !apiclient.IsCode(err, domain.CodeInvalid) {
		t.Errorf("unknown migration scenario: %v", err)
	}
	id, err := e.client(auth.RoleAdmin).UpgradeMigrate(ctx, "w", "master", "bad-migrate")
	if err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun(id); run.Status != store.RunFailed || !strings.Contains(run.Error, "state_schema") {
		t.Fatalf("bad migration: %s %s", run.Status, run.Error)
	}
	if inc := e.incarnationRecord("w"); inc.Commit != old.Commit || inc.Ref != old.Ref || inc.State["schema"] != nil {
		t.Fatalf("after the bad migration: %+v", inc)
	}
	if _, err := op.UnlockIncarnation(ctx, "w", "the bad migration changed nothing"); err != nil {
		t.Fatal(err)
	}

	// The good one: the new commit, with the migrated state.
	st, body = e.do("POST", "/v1/incarnations/w/upgrade", e.tokens[auth.RoleAdmin], `{"ref":"master","migrate":"migrate"}`)
	if st != http.StatusAccepted || !strings.Contains(string(body), `"apply_id"`) {
		t.Fatalf("upgrade with migration: %d %s", st, body)
	}
	runs, _ := op.ListRuns(ctx, "w", 1)
	run := e.waitRun(runs[0].ID)
	if run.Status != store.RunSucceeded || run.UpgradeRef != "master" || run.Commit != c2 {
		t.Fatalf("migration run: %+v", run)
	}
	inc := e.incarnationRecord("w")
	if inc.Commit != c2 || inc.State["schema"] != float64(2) || inc.State["banner"] != "managed" || inc.Status != store.IncarnationReady {
		t.Errorf("after the migration: %+v", inc)
	}
}

func (e *env) incarnationRecord(name string) store.Incarnation {
	e.t.Helper()
	inc, err := e.st.GetIncarnation(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return inc
}
