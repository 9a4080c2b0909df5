package engine_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestUnknownCovenRefusesTheRun (SPEC §6 decision): a coven in on: that no
// soul, join token or incarnation carries is refused before anything runs,
// with file:line:col and "did you mean".
func TestUnknownCovenRefusesTheRun(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: typo
    module: core.test.ping
    on: [prod, baremtal]
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod, baremetal]}]
expect: {outcome: succeeded}
`)
	_, err := w.Start(w.ctx)
	var de *domain.Error
	if !errorsAs(err, &de) || de.Code != domain.CodeUnprocessable {
		t.Fatalf("start: err = %v, want a 422 (CodeUnprocessable)", err)
	}
	want := `unknown coven "baremtal" in scenario/deploy/main.yml:4:16 (did you mean baremetal?)`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if calls := w.Sim.Calls(); len(calls) != 0 {
		t.Errorf("something ran: %+v", calls)
	}
}

// TestCovenKnownOnlyToAJoinToken: a coven only an unexpired join token
// grants is known; the step targets no member (and says so), the run goes
// on.
func TestCovenKnownOnlyToAJoinToken(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: future hosts
    module: core.test.ping
    register: future
    on: [gpu]
  - name: everyone
    module: core.test.echo
    params: {message: "${ size(register.future) }"}
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod]}]
expect:
  outcome: succeeded
  tasks:
    - {task: future hosts, ran: []}
    - {task: everyone, ran: [a]}
`)
	if err := w.Store.CreateJoinToken(w.ctx, store.JoinToken{ID: "t1", SecretHash: []byte("h"), Covens: []string{"gpu"}, ExpiresAt: time.Now().Add(time.Hour), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	run := w.run()
	wantNotes(t, w, run.ID, []store.RunNote{{RunID: run.ID, Seq: 0, Path: "0", TaskName: "future hosts", Note: "on: [gpu] matched no member of this incarnation"}})
}

// TestRunRecordNotesNoHost (SPEC §6): the stored run record says, for
// each step that targeted no host, why — on: matched no member, or where:
// was false everywhere; a step that ran has no note.
func TestRunRecordNotesNoHost(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: ran
    module: core.test.ping
  - name: db only
    module: core.test.ping
    on: [prod, db]
  - name: filtered
    module: core.test.ping
    where: soulprint.self.sid == "nobody"
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod]}, {sid: b, covens: [db]}]
expect:
  outcome: succeeded
  tasks:
    - {task: ran, ran: [a, b]}
    - {task: db only, ran: []}
    - {task: filtered, ran: []}
`)
	run := w.run()
	wantNotes(t, w, run.ID, []store.RunNote{
		{RunID: run.ID, Seq: 1, Path: "1", TaskName: "db only", Note: "on: [prod, db] matched no member of this incarnation"},
		{RunID: run.ID, Seq: 2, Path: "2", TaskName: "filtered", Note: "where: was false on every host"},
	})
}

// wantNotes checks the run notes stored for run id.
func wantNotes(t *testing.T, w *world, id string, want []store.RunNote) {
	t.Helper()
	got, err := w.Store.ListRunNotes(w.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run notes = %+v, want %+v", got, want)
	}
}

// TestCovenKnownOnlyToACloudProfile (SPEC §6 decision): a coven only a
// cloud profile carries is known (its souls are yet to be created), while
// one only an expired join token granted is not: that run is refused.
func TestCovenKnownOnlyToACloudProfile(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: cloud hosts
    module: core.test.ping
    on: [cloud-web]
  - name: everyone
    module: core.test.ping
`})
	t.Run("cloud profile", func(t *testing.T) {
		w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod]}]
expect:
  outcome: succeeded
  tasks:
    - {task: cloud hosts, ran: []}
    - {task: everyone, ran: [a]}
`)
		if err := w.Store.PutCloudProvider(w.ctx, store.CloudProvider{Name: "p", Kind: "local", Config: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Store.PutCloudProfile(w.ctx, store.CloudProfile{Name: "web", Provider: "p", Spec: map[string]any{}, Covens: []string{"cloud-web"}}); err != nil {
			t.Fatal(err)
		}
		w.run()
	})
	t.Run("expired join token", func(t *testing.T) {
		w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod]}]
expect: {outcome: succeeded}
`)
		past := time.Now().Add(-2 * time.Hour)
		if err := w.Store.CreateJoinToken(w.ctx, store.JoinToken{ID: "t1", SecretHash: []byte("h"), Covens: []string{"cloud-web"}, ExpiresAt: past.Add(time.Hour), CreatedAt: past}); err != nil {
			t.Fatal(err)
		}
		_, err := w.Start(w.ctx)
		var de *domain.Error
		if !errorsAs(err, &de) || de.Code != domain.CodeUnprocessable || !strings.Contains(err.Error(), `unknown coven "cloud-web" in scenario/deploy/main.yml:4:10`) {
			t.Fatalf("start: err = %v, want a 422 naming cloud-web and its line", err)
		}
	})
}

// TestCovenKnownAmongManyCovens: with more distinct covens than one
// coven listing holds (store.MaxPageLimit), a coven only a soul outside
// the incarnation carries, sorted after all of them, is still known: the
// run goes on.
func TestCovenKnownAmongManyCovens(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": `
tasks:
  - name: late coven
    module: core.test.ping
    on: [zz-last]
  - name: everyone
    module: core.test.ping
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [prod]}]
incarnation: {covens: [prod]}
expect:
  outcome: succeeded
  tasks:
    - {task: late coven, ran: []}
    - {task: everyone, ran: [a]}
`)
	var souls []store.Soul
	for i := range store.MaxPageLimit {
		souls = append(souls, store.Soul{SID: fmt.Sprintf("o%04d", i), Status: store.SoulConnected, Covens: []string{fmt.Sprintf("c%04d", i)}, Soulprint: map[string]any{}})
	}
	souls = append(souls, store.Soul{SID: "z", Status: store.SoulConnected, Covens: []string{"zz-last"}, Soulprint: map[string]any{}})
	if err := w.Store.UpsertSouls(w.ctx, souls); err != nil {
		t.Fatal(err)
	}
	w.run()
}
