package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// TestHealthRoutes: GET /v1/incarnations/{name}/health groups the stored
// states by check with counts, worst host first, and shows a host silent
// for longer than stale_after as stale; GET /v1/health puts incarnations
// with anything not OK first; GET /v1/souls/{sid}/vitals returns the last
// vital signs. Answers are checked against openapi.json by the contract
// recorder; an unknown incarnation or soul is 404.
func TestHealthRoutes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().UTC()
	for _, name := range []string{"calm", "sick"} {
		if err := e.st.CreateService(ctx, store.Service{Name: "svc-" + name, Git: "x", Ref: "main", Commit: "c"}); err != nil {
			t.Fatal(err)
		}
		if err := e.st.CreateIncarnation(ctx, store.Incarnation{Name: name, Service: "svc-" + name, Covens: []string{"c"}, Members: []string{"a", "b"}},
			store.Run{ID: name + "-create", Scenario: "create"}); err != nil {
			t.Fatal(err)
		}
	}
	st := func(inc, check, sid, status string, reported time.Time) store.HealthState {
		return store.HealthState{Incarnation: inc, Check: check, SID: sid, Status: status, Message: status + " message",
			Since: now.Add(-time.Minute), CheckedAt: reported, ReportedAt: reported}
	}
	if err := e.st.PutHealthStates(ctx, []store.HealthState{
		st("calm", "ping", "a", "OK", now), st("calm", "ping", "b", "OK", now),
		st("sick", "ping", "a", "OK", now), st("sick", "ping", "b", "CRITICAL", now),
		st("sick", "role", "a", "WARNING", now.Add(-time.Hour)), // silent for an hour: stale
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.AddHealthTransitions(ctx, []store.HealthTransition{{Incarnation: "sick", Check: "ping", SID: "b", From: "OK", To: "CRITICAL", Message: "refused", At: now}}); err != nil {
		t.Fatal(err)
	}
	c := e.client(auth.RoleViewer)
	h, err := c.IncarnationHealth(ctx, "sick")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Checks) != 2 || h.Checks[0].Name != "ping" || h.Checks[0].Hosts[0].SID != "b" || h.Checks[0].Hosts[0].Status != "CRITICAL" {
		t.Fatalf("sick health: %+v", h)
	}
	if role := h.Checks[1].Hosts[0]; role.Status != "stale" || role.LastStatus != "WARNING" {
		t.Errorf("a host silent for an hour: %+v", role)
	}
	if h.Counts["OK"] != 1 || h.Counts["CRITICAL"] != 1 || h.Counts["stale"] != 1 || len(h.Transitions) != 1 || h.Transitions[0].To != "CRITICAL" {
		t.Errorf("counts %v, transitions %+v", h.Counts, h.Transitions)
	}
	ov, err := c.HealthOverview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Incarnations) != 2 || ov.Incarnations[0].Incarnation != "sick" || ov.Incarnations[1].Counts["OK"] != 2 {
		t.Errorf("overview: %+v", ov)
	}

	if err := e.st.UpsertSoul(ctx, store.Soul{SID: "a", PublicKey: make([]byte, 32), Status: store.SoulDisconnected}); err != nil {
		t.Fatal(err)
	}
	v, err := c.SoulVitals(ctx, "a")
	if err != nil || v.At != nil || len(v.Vitals) != 0 {
		t.Fatalf("vitals before any report: %+v, %v", v, err)
	}
	if err := e.st.PutVitals(ctx, []store.Vitals{{SID: "a", Vitals: map[string]any{"load1": 0.25, "failed_units": []any{}}, At: now}}); err != nil {
		t.Fatal(err)
	}
	if v, err = c.SoulVitals(ctx, "a"); err != nil || v.At == nil || v.Vitals["load1"] != 0.25 {
		t.Fatalf("vitals: %+v, %v", v, err)
	}

	for _, path := range []string{"/v1/incarnations/nope/health", "/v1/souls/nope/vitals", "/v1/incarnations/nope/health/events"} {
		code, b := e.do("GET", path, e.tokens[auth.RoleViewer], "")
		if code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", path, code, b)
		}
	}
	if code, b := e.do("GET", "/v1/incarnations/sick/health?transitions=x", e.tokens[auth.RoleViewer], ""); code != http.StatusBadRequest {
		t.Errorf("bad transitions: %d %s", code, b)
	}
}
