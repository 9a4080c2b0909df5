package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/store"
)

// notesService has steps that target no member of a web incarnation: one
// on a coven only a non-member carries, one whose where: is false.
var notesService = map[string]string{
	"service.yml": "name: notes\n",
	"scenario/create/main.yml": `
tasks:
  - name: everyone
    module: core.test.ping
  - name: db only
    module: core.test.ping
    on: [db]
  - name: filtered
    module: core.test.ping
    where: soulprint.self.sid == "nobody"
`,
}

// TestRunRecordSaysNoHost (SPEC §6): GET /v1/runs/{apply_id} lists, in task
// order, each step that targeted no host with empty hosts and a note
// saying why; the note is a property openapi.json documents for RunTask.
func TestRunRecordSaysNoHost(t *testing.T) {
	e := newEnv(t)
	e.fleet() // souls a, b (web) and c (db)
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(notesService, "v1")
	if _, err := e.client(auth.RoleAdmin).RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "notes", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	acc, err := e.client(auth.RoleOperator).CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "notes-web", Service: "notes", Covens: []string{"web"}})
	if err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun(acc.ApplyID); run.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}

	st, b := e.do("GET", "/v1/runs/"+acc.ApplyID, e.tokens[auth.RoleViewer], "")
	if st != http.StatusOK {
		t.Fatalf("GET run: %d %s", st, b)
	}
	var detail struct {
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal(b, &detail); err != nil {
		t.Fatal(err)
	}
	type task struct {
		Name, Note string
		Hosts      int
	}
	var got []task
	for _, tk := range detail.Tasks {
		note, _ := tk["note"].(string)
		hosts, _ := tk["hosts"].([]any)
		got = append(got, task{Name: tk["name"].(string), Note: note, Hosts: len(hosts)})
	}
	want := []task{
		{Name: "everyone", Hosts: 2},
		{Name: "db only", Note: "on: [db] matched no member of this incarnation"},
		{Name: "filtered", Note: "where: was false on every host"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run tasks = %+v, want %+v\n%s", got, want, b)
	}

	// Every key of a task entry is documented.
	_, doc := e.do("GET", "/v1/openapi.json", "", "")
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &spec); err != nil {
		t.Fatal(err)
	}
	props := spec.Components.Schemas["RunTask"].Properties
	for _, tk := range detail.Tasks {
		for k := range tk {
			if _, ok := props[k]; !ok {
				t.Errorf("run task key %q is not a RunTask property in openapi.json", k)
			}
		}
	}
}
