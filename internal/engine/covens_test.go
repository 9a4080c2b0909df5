package engine_test

import (
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
	w.run()
}
