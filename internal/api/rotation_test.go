package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestSecretRotation (SPEC §10.5): setting a new value of a store secret
// takes effect for runs that start later; a run in flight keeps the value
// it started with, before and after the rotation, and masks it.
func TestSecretRotation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const oldVal, newVal = "Api-Key-Old-1111", "Api-Key-New-2222"
	admin := e.client(auth.RoleAdmin)
	if _, err := admin.SetSecret(ctx, "api_key", oldVal); err != nil {
		t.Fatal(err)
	}
	repo := catalogtest.NewRepo(t)
	repo.Commit(map[string]string{
		"service.yml": "name: rot\n",
		"scenario/create/main.yml": `
tasks:
  - name: before
    module: core.test.echo
    params: {message: "key=${ secret(\"api_key\") }"}
  - name: hold
    module: core.test.echo
    params: {message: "held"}
  - name: after
    module: core.test.echo
    params: {message: "key=${ secret(\"api_key\") }"}
`}, "v1")
	if _, err := admin.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "rot", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	for sid, coven := range map[string]string{"h1": "early", "h2": "late"} {
		if err := e.st.UpsertSoul(ctx, store.Soul{SID: sid, Status: store.SoulConnected, Covens: []string{coven}}); err != nil {
			t.Fatal(err)
		}
		e.sim.AddHost(dispatch.SimHost{SID: sid})
	}
	gate := make(chan struct{})
	released := false
	t.Cleanup(func() {
		if !released {
			close(gate)
		}
	})
	// The hosts echo what they got, as core.test.echo does.
	echo := func(task, sid, v string) dispatch.Stub {
		return dispatch.Stub{Task: task, Hosts: []string{sid}, Results: []domain.Result{{Stdout: "key=" + v}}}
	}
	e.sim.SetStubs([]dispatch.Stub{{Task: "hold", Hosts: []string{"h1"}, Wait: gate},
		echo("before", "h1", oldVal), echo("after", "h1", oldVal), echo("before", "h2", newVal), echo("after", "h2", newVal)})
	op := e.tokens[auth.RoleOperator]
	create := func(name, coven string) string {
		t.Helper()
		st, b := e.do("POST", "/v1/incarnations", op, `{"name":"`+name+`","service":"rot","covens":["`+coven+`"]}`)
		if st != http.StatusAccepted {
			t.Fatalf("create %s: %d %s", name, st, b)
		}
		var acc apitypes.Accepted
		if err := json.Unmarshal(b, &acc); err != nil {
			t.Fatal(err)
		}
		return acc.ApplyID
	}
	messages := func(sid string) map[string]string {
		out := map[string]string{}
		for _, c := range e.sim.Calls() {
			if c.SID == sid {
				m, _ := c.Params["message"].(string)
				out[c.Task] = m
			}
		}
		return out
	}

	early := create("rot-early", "early")
	deadline := time.Now().Add(10 * time.Second)
	for messages("h1")["hold"] == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the early run never reached the held task: %v", messages("h1"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Rotated while the early run is in flight.
	if _, err := admin.SetSecret(ctx, "api_key", newVal); err != nil {
		t.Fatal(err)
	}
	late := e.waitRun(create("rot-late", "late"))
	if late.Status != store.RunSucceeded {
		t.Fatalf("late run: %s %s", late.Status, late.Error)
	}
	close(gate)
	released = true
	if r := e.waitRun(early); r.Status != store.RunSucceeded {
		t.Fatalf("early run: %s %s", r.Status, r.Error)
	}
	if got := messages("h1"); got["before"] != "key="+oldVal || got["after"] != "key="+oldVal {
		t.Errorf("the run in flight did not keep the value it started with: %v", got)
	}
	if got := messages("h2"); got["before"] != "key="+newVal || got["after"] != "key="+newVal {
		t.Errorf("the run started after the rotation did not get the new value: %v", got)
	}
	for id, v := range map[string]string{early: oldVal, late.ID: newVal} {
		st, b := e.do("GET", "/v1/runs/"+id, e.tokens[auth.RoleViewer], "")
		if st != http.StatusOK || strings.Contains(string(b), v) || !strings.Contains(string(b), `"stdout":"****"`) {
			t.Errorf("run %s as a viewer reads it: %d %s", id, st, b)
		}
	}
}
