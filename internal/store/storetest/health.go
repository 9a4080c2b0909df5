package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var healthTests = []test{
	{"States", testHealthStates},
	{"Transitions", testHealthTransitions},
	{"Vitals", testVitals},
	{"RunHealth", testRunHealth},
}

// testHealthStates: states upsert by (incarnation, check, sid) in batches,
// list in order, drop silently for unknown incarnations, are retained to
// the current checks and members, and go with their incarnation.
func testHealthStates(t *testing.T, s store.Store) {
	ctx := t.Context()
	newIncarnation(t, s, "redis", "cache", "h1", "h2")
	ok := store.HealthState{Incarnation: "cache", Check: "ping", SID: "h1", Status: "OK", Message: "PONG",
		Perfdata: map[string]float64{"time": 0.002}, Since: at(0), CheckedAt: at(time.Second), ReportedAt: at(2 * time.Second)}
	crit := store.HealthState{Incarnation: "cache", Check: "ping", SID: "h2", Status: "CRITICAL", Message: "refused",
		Since: at(0), CheckedAt: at(time.Second), ReportedAt: at(2 * time.Second), Flaps: 3}
	role := store.HealthState{Incarnation: "cache", Check: "role", SID: "h1", Status: "WARNING", Since: at(0), CheckedAt: at(0), ReportedAt: at(0)}
	ghost := store.HealthState{Incarnation: "gone", Check: "ping", SID: "h1", Status: "OK", Since: at(0), CheckedAt: at(0), ReportedAt: at(0)}
	must(t, s.PutHealthStates(ctx, []store.HealthState{role, crit, ok, ghost}))
	crit.Status, crit.Message, crit.Since = "OK", "PONG", at(time.Minute)
	must(t, s.PutHealthStates(ctx, []store.HealthState{crit}))
	got, err := s.ListHealthStates(ctx, "cache")
	must(t, err)
	diff(t, "health states", got, []store.HealthState{ok, crit, role})
	all, err := s.ListHealthStates(ctx, "")
	must(t, err)
	diff(t, "all health states", all, got)

	n, err := s.RetainHealthStates(ctx, "cache", []string{"ping"}, []string{"h1"})
	must(t, err)
	if n != 2 {
		t.Errorf("retained: deleted %d, want 2 (role on h1, ping on h2)", n)
	}
	got, err = s.ListHealthStates(ctx, "cache")
	must(t, err)
	diff(t, "retained states", got, []store.HealthState{ok})
}

// testHealthTransitions: transitions list newest first, are bounded by
// age and by count per incarnation.
func testHealthTransitions(t *testing.T, s store.Store) {
	ctx := t.Context()
	newIncarnation(t, s, "redis", "a", "h1")
	newIncarnation(t, s, "redis", "b", "h1")
	var batch []store.HealthTransition
	for i := range 10 {
		batch = append(batch, store.HealthTransition{Incarnation: "a", Check: "ping", SID: "h1", From: "OK", To: "CRITICAL", Message: "x", At: at(time.Duration(i) * time.Minute)})
	}
	batch = append(batch, store.HealthTransition{Incarnation: "b", Check: "ping", SID: "h1", From: "UNKNOWN", To: "OK", At: at(0)},
		store.HealthTransition{Incarnation: "nope", Check: "ping", SID: "h1", From: "UNKNOWN", To: "OK", At: at(0)})
	must(t, s.AddHealthTransitions(ctx, batch))
	got, err := s.ListHealthTransitions(ctx, "a", 3)
	must(t, err)
	if len(got) != 3 || !got[0].At.Equal(at(9*time.Minute)) || got[0].ID <= got[1].ID {
		t.Fatalf("newest three of a: %+v", got)
	}
	n, err := s.PruneHealthTransitions(ctx, 4, at(2*time.Minute))
	must(t, err)
	if n != 7 {
		t.Errorf("pruned %d, want 7 (3 by age: a's first two and b's one; then all but the newest 4 of a's other 8)", n)
	}
	got, err = s.ListHealthTransitions(ctx, "", 0)
	must(t, err)
	if len(got) != 4 || !got[3].At.Equal(at(6*time.Minute)) {
		t.Errorf("after pruning: %+v", got)
	}
}

// testVitals: vital signs upsert by SID and list by SID.
func testVitals(t *testing.T, s store.Store) {
	ctx := t.Context()
	v1 := store.Vitals{SID: "h1", Vitals: map[string]any{"load1": 0.5}, At: at(0)}
	v2 := store.Vitals{SID: "h2", Vitals: map[string]any{"uptime_s": float64(10)}, At: at(0)}
	must(t, s.PutVitals(ctx, []store.Vitals{v2, v1}))
	v1.Vitals, v1.At = map[string]any{"load1": 1.5}, at(time.Minute)
	must(t, s.PutVitals(ctx, []store.Vitals{v1}))
	got, err := s.ListVitals(ctx, nil)
	must(t, err)
	diff(t, "vitals", got, []store.Vitals{v1, v2})
	got, err = s.ListVitals(ctx, []string{"h2", "h9"})
	must(t, err)
	diff(t, "vitals of h2", got, []store.Vitals{v2})
}

// testRunHealth: the health after a run is kept with it, replaced by a
// later one, absent (nil) for a run without, dropped for an unknown run.
func testRunHealth(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1")
	got, err := s.GetRunHealth(ctx, run.ID)
	must(t, err)
	if got != nil {
		t.Fatalf("health of a run without: %s", got)
	}
	must(t, s.PutRunHealth(ctx, run.ID, []byte(`[{"sid":"h1"}]`), at(0)))
	must(t, s.PutRunHealth(ctx, run.ID, []byte(`[{"sid":"h1","outcomes":[]}]`), at(time.Second)))
	must(t, s.PutRunHealth(ctx, "no-such-run", []byte(`[]`), at(0)))
	got, err = s.GetRunHealth(ctx, run.ID)
	must(t, err)
	if string(got) != `[{"sid":"h1","outcomes":[]}]` {
		t.Errorf("run health: %s", got)
	}
	got, err = s.GetRunHealth(ctx, "no-such-run")
	must(t, err)
	if got != nil {
		t.Errorf("health of an unknown run: %s", got)
	}
}
