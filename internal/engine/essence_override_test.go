package engine_test

import (
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
)

// TestEssenceOverrideOfAnotherTypeIsRefused (issue 35): an essence override
// is checked against the type of essence/_default.yaml's value when the
// incarnation is created (CodeInvalid: API 422, soulctl exit 2), instead
// of making `when: essence.port > 1024` fail at run time.
func TestEssenceOverrideOfAnotherTypeIsRefused(t *testing.T) {
	svc := loadService(t, map[string]string{
		"essence/_default.yaml": "port: 8080\nratio: 0.5\ndb: {host: a, size: 3}\nfree: null\n",
		"scenario/create/main.yml": `
tasks:
  - name: high port
    module: core.test.echo
    when: essence.port > 1024
    params: {message: ok}
`})
	w := newWorld(t, svc, "create", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
essence: {port: "x", ratio: 1, db: {size: "big", host: b}, free: [1], extra: "any"}
expect:
  outcome: succeeded
`)
	_, err := w.Start(w.ctx)
	var de *domain.Error
	if !errorsAs(err, &de) || de.Code != domain.CodeInvalid {
		t.Fatalf("start: %v, want a CodeInvalid error", err)
	}
	for _, want := range []string{`db.size must be an integer like the default 3, got string "big"`, `port must be an integer like the default 8080, got string "x"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "ratio") || strings.Contains(err.Error(), "free") || strings.Contains(err.Error(), "extra") {
		t.Errorf("error %q names a fitting override", err)
	}
	// The same overrides with the right types create the incarnation.
	newWorld(t, svc, "create", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
essence: {port: 9090, ratio: 1, db: {size: 4}}
expect:
  outcome: succeeded
  tasks:
    - {task: high port, ran: [a]}
`).run()
}
