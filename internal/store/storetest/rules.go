package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var rulesTests = []test{
	{"KeeperRules", testKeeperRules},
	{"Pauses", testRulePauses},
	{"Firings", testFirings},
	{"Endpoints", testEndpoints},
	{"Deliveries", testDeliveries},
}

func testKeeperRules(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.PutKeeperRule(ctx, store.KeeperRule{Name: "page", Source: "on: run.ended\n", Owner: "a1"}))
	must(t, s.PutKeeperRule(ctx, store.KeeperRule{Name: "page", Source: "on: drift.found\n", Owner: "a2"}))
	r, err := s.GetKeeperRule(ctx, "page")
	must(t, err)
	if r.Source != "on: drift.found\n" || r.Owner != "a2" {
		t.Fatalf("rule = %+v", r)
	}
	rs, err := s.ListKeeperRules(ctx)
	must(t, err)
	if len(rs) != 1 {
		t.Fatalf("list = %+v", rs)
	}
	must(t, s.DeleteKeeperRule(ctx, "page"))
	if _, err := s.GetKeeperRule(ctx, "page"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("get deleted = %v", err)
	}
	if err := s.DeleteKeeperRule(ctx, "page"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("delete twice = %v", err)
	}
}

func testRulePauses(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.PutRulePause(ctx, store.RulePause{Rule: "inc/heal", By: "a1", Reason: "maintenance", At: at(0)}))
	must(t, s.PutRulePause(ctx, store.RulePause{Rule: "*", By: "a1", At: at(1e6)}))
	ps, err := s.ListRulePauses(ctx)
	must(t, err)
	want := []store.RulePause{{Rule: "*", By: "a1", At: at(1e6)}, {Rule: "inc/heal", By: "a1", Reason: "maintenance", At: at(0)}}
	if d := cmp.Diff(want, ps); d != "" {
		t.Fatalf("pauses (-want +got):\n%s", d)
	}
	must(t, s.DeleteRulePause(ctx, "inc/heal"))
	must(t, s.DeleteRulePause(ctx, "inc/heal"))
	ps, _ = s.ListRulePauses(ctx)
	if len(ps) != 1 {
		t.Fatalf("after resume: %+v", ps)
	}
}

func testFirings(t *testing.T, s store.Store) {
	ctx := context.Background()
	ev := map[string]any{"kind": "health.changed", "sid": "h1", "streak": float64(2)}
	ids, err := s.AddFirings(ctx, []store.Firing{
		{Rule: "inc/heal", Incarnation: "inc", EventKind: "health.changed", Event: ev, IncidentKey: "inc/d/h1", Decision: store.FiringFired, Action: "run", Owner: "a1", At: at(0)},
		{Rule: "inc/heal", Incarnation: "inc", EventKind: "health.changed", Event: ev, IncidentKey: "inc/d/h1", Decision: store.FiringSuppressed, Reason: store.SuppressedDuplicate, Action: "run", At: at(1)},
		{Rule: "keeper/page", EventKind: "run.ended", Event: map[string]any{}, Decision: store.FiringFired, Action: "procedure", At: at(2)},
	})
	must(t, err)
	if len(ids) != 3 || ids[0] >= ids[1] || ids[1] >= ids[2] {
		t.Fatalf("ids = %v", ids)
	}
	must(t, s.SetFiringOutcome(ctx, ids[0], "run-1", nil, ""))
	must(t, s.SetFiringOutcome(ctx, ids[2], "", []string{"t1", "t2"}, ""))
	all, err := s.ListFirings(ctx, store.FiringFilter{})
	must(t, err)
	if len(all) != 3 || all[0].ID != ids[2] || !cmp.Equal(all[0].TaskIDs, []string{"t1", "t2"}) {
		t.Fatalf("all = %+v", all)
	}
	heal, err := s.ListFirings(ctx, store.FiringFilter{Rule: "inc/heal", Decision: store.FiringFired})
	must(t, err)
	if len(heal) != 1 || heal[0].RunID != "run-1" || heal[0].Event["sid"] != "h1" || !heal[0].At.Equal(at(0)) || heal[0].Owner != "a1" {
		t.Fatalf("heal fired = %+v", heal)
	}
	page, _ := s.ListFirings(ctx, store.FiringFilter{Before: ids[2], Limit: 1})
	if len(page) != 1 || page[0].ID != ids[1] || page[0].Reason != store.SuppressedDuplicate {
		t.Fatalf("page = %+v", page)
	}
	rule, err := s.RunRule(ctx, "run-1")
	must(t, err)
	if rule != "inc/heal" {
		t.Fatalf("RunRule = %q", rule)
	}
	if rule, _ := s.RunRule(ctx, "run-2"); rule != "" {
		t.Fatalf("RunRule of an operator's run = %q", rule)
	}
	must(t, s.SetFiringOutcome(ctx, ids[0], "", nil, "incarnation is error_locked"))
	failed, _ := s.ListFirings(ctx, store.FiringFilter{Decision: store.FiringFailed})
	if len(failed) != 1 || failed[0].Error != "incarnation is error_locked" {
		t.Fatalf("failed = %+v", failed)
	}
}

func testEndpoints(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.PutEndpoint(ctx, store.NotifyEndpoint{Name: "pager", Kind: "webhook", URL: "http://127.0.0.1:9/x", Sealed: []byte{1, 2, 3}, Owner: "a1",
		Config: map[string]any{"max_attempts": float64(5)}}))
	must(t, s.PutEndpoint(ctx, store.NotifyEndpoint{Name: "mail", Kind: "email", Config: map[string]any{"to": []any{"ops@example.com"}}, Owner: "a1"}))
	e, err := s.GetEndpoint(ctx, "pager")
	must(t, err)
	if !e.HasSecret || string(e.Sealed) != "\x01\x02\x03" || e.Config["max_attempts"] != float64(5) {
		t.Fatalf("pager = %+v", e)
	}
	es, err := s.ListEndpoints(ctx)
	must(t, err)
	if len(es) != 2 || es[0].Name != "mail" || es[0].HasSecret {
		t.Fatalf("list = %+v", es)
	}
	must(t, s.DeleteEndpoint(ctx, "mail"))
	if err := s.DeleteEndpoint(ctx, "mail"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("delete twice = %v", err)
	}
}

func testDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	id1, err := s.AddDelivery(ctx, store.Delivery{Endpoint: "pager", FiringID: 7, Payload: []byte(`{"a":1}`), NextAt: at(0)})
	must(t, err)
	id2, err := s.AddDelivery(ctx, store.Delivery{Endpoint: "pager", Payload: []byte(`{}`), NextAt: at(60e9)})
	must(t, err)
	due, err := s.DueDeliveries(ctx, at(1e9), 10)
	must(t, err)
	if len(due) != 1 || due[0].ID != id1 || string(due[0].Payload) != `{"a":1}` || due[0].Status != store.DeliveryPending {
		t.Fatalf("due = %+v", due)
	}
	d := due[0]
	d.Status, d.Attempts, d.LastError, d.NextAt = store.DeliveryDead, 5, "connection refused", at(0)
	must(t, s.UpdateDelivery(ctx, d))
	dead, err := s.ListDeliveries(ctx, store.DeliveryDead, 0)
	must(t, err)
	if len(dead) != 1 || dead[0].Attempts != 5 || dead[0].LastError != "connection refused" {
		t.Fatalf("dead = %+v", dead)
	}
	all, _ := s.ListDeliveries(ctx, "", 0)
	if len(all) != 2 || all[0].ID != id2 {
		t.Fatalf("all = %+v", all)
	}
	got, err := s.GetDelivery(ctx, id2)
	must(t, err)
	if got.FiringID != 0 || got.Status != store.DeliveryPending {
		t.Fatalf("get = %+v", got)
	}
}
