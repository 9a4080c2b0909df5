package rules

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// recorder is the test's Actions: it records what the rules started.
type recorder struct {
	mu       sync.Mutex
	runs     []string
	inputs   []map[string]any
	procs    []map[string]any
	notified []Notification
	next     int
}

func (r *recorder) StartRun(_ context.Context, inc, scenario string, input map[string]any, _ bool, archon string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.runs = append(r.runs, inc+"/"+scenario+"@"+archon)
	r.inputs = append(r.inputs, input)
	return fmt.Sprintf("run-%d", r.next), nil
}

func (r *recorder) ExecuteProcedure(_ context.Context, name string, vars map[string]any, _ string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs = append(r.procs, vars)
	return []string{"task-" + name}, nil
}

func (r *recorder) WaitTasks(context.Context, []string) {}

func (r *recorder) Notify(_ context.Context, _ []string, n Notification, _ int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notified = append(r.notified, n)
	return nil
}

const guard = "cooldown: 10m\nmax_per_hour: 5\nmax_concurrent: 2\n"

func healRule(t *testing.T, extra string) *dsl.Rule {
	t.Helper()
	r, err := dsl.ParseRule("heal", []byte(`on: health.changed
if: event.to == "CRITICAL" && event.streak == 2
do:
  run:
    scenario: restart
    incarnation: "${ event.incarnation }"
    input: {host: "${ event.sid }"}
`+extra))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type harness struct {
	e   *Engine
	st  store.Store
	rec *recorder
	now time.Time
}

func newHarness(t *testing.T, rule *dsl.Rule, owner OwnerCheck) *harness {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{st: st, rec: &recorder{}, now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.e = New(Config{Store: st, Actions: h.rec, Owner: owner, Now: func() time.Time { return h.now },
		Services: func(context.Context, string) (string, map[string]*dsl.Rule, string, error) {
			return "svc", map[string]*dsl.Rule{"heal": rule}, "archon-1", nil
		}})
	return h
}

func (h *harness) health(inc, sid, from, to string, streak int) Event {
	return Event{Kind: dsl.EventHealthChanged, Incarnation: inc, Time: h.now,
		Fields: map[string]any{"service": "svc", "check": "daemon", "sid": sid, "from": from, "to": to, "streak": streak, "duration_s": 5, "message": ""}}
}

func (h *harness) process(evs ...Event) {
	h.e.Process(context.Background(), evs)
	h.e.wg.Wait()
}

func (h *harness) decisions(t *testing.T) map[string]int {
	t.Helper()
	fs, err := h.st.ListFirings(context.Background(), store.FiringFilter{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range fs {
		k := f.Decision
		if f.Reason != "" && f.Decision == store.FiringSuppressed {
			k += ":" + f.Reason
		}
		out[k]++
	}
	return out
}

func TestFlappingFiresOnce(t *testing.T) {
	h := newHarness(t, healRule(t, guard), nil)
	for i := 0; i < 3; i++ { // flaps: CRITICAL twice, then OK, again and again
		h.process(h.health("inc", "h1", "OK", "CRITICAL", 1), h.health("inc", "h1", "OK", "CRITICAL", 2))
		h.now = h.now.Add(time.Minute)
		h.process(h.health("inc", "h1", "CRITICAL", "OK", 1))
		h.now = h.now.Add(time.Minute)
	}
	if len(h.rec.runs) != 1 || h.rec.runs[0] != "inc/restart@archon-1" || h.rec.inputs[0]["host"] != "h1" {
		t.Fatalf("runs = %v %v", h.rec.runs, h.rec.inputs)
	}
	got := h.decisions(t)
	want := map[string]int{"fired": 1, "resolved": 1, "suppressed:cooldown": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("decisions = %v, want %v", got, want)
	}
	// After the cooldown, a new incident fires again.
	h.now = h.now.Add(10 * time.Minute)
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2))
	if len(h.rec.runs) != 2 {
		t.Fatalf("after the cooldown: runs = %v", h.rec.runs)
	}
}

func TestDuplicateWhileOpen(t *testing.T) {
	h := newHarness(t, healRule(t, guard), nil)
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2), h.health("inc", "h1", "OK", "CRITICAL", 2))
	if got := h.decisions(t); got["fired"] != 1 || got["suppressed:duplicate"] != 1 {
		t.Fatalf("decisions = %v", got)
	}
}

func TestStormIsBoundedAndNothingLost(t *testing.T) {
	h := newHarness(t, healRule(t, guard), nil)
	var evs []Event
	for i := 0; i < 1000; i++ {
		evs = append(evs, h.health("inc", fmt.Sprintf("h%04d", i), "OK", "CRITICAL", 2))
	}
	for _, ev := range evs {
		h.e.Publish(ev)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.e.Run(ctx); close(done) }()
	for h.e.Stats().Events < 1000 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	got := h.decisions(t)
	// max_concurrent 2 (the runs have not ended) holds first.
	if got["fired"] != 2 || got["suppressed:max_concurrent"] != 998 {
		t.Fatalf("decisions = %v", got)
	}
	if len(h.rec.runs) != 2 {
		t.Fatalf("runs = %d", len(h.rec.runs))
	}
	// The runs end: the slots free; the hourly maximum (5) holds next.
	for _, id := range []string{"run-1", "run-2"} {
		if r := h.e.RunEnded(context.Background(), id); r != "inc/heal" {
			t.Fatalf("RunEnded(%s) = %q", id, r)
		}
	}
	for i := 0; i < 10; i++ {
		h.process(h.health("inc", fmt.Sprintf("x%d", i), "OK", "CRITICAL", 2))
		h.e.RunEnded(context.Background(), fmt.Sprintf("run-%d", len(h.rec.runs)))
	}
	got = h.decisions(t)
	if got["fired"] != 5 || got["suppressed:max_per_hour"] != 7 {
		t.Fatalf("decisions = %v", got)
	}
}

func TestDryRunPauseAndOwner(t *testing.T) {
	h := newHarness(t, healRule(t, guard+"dry_run: true\n"), nil)
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2))
	fs, _ := h.st.ListFirings(context.Background(), store.FiringFilter{})
	if len(h.rec.runs) != 0 || len(fs) != 1 || fs[0].Decision != store.FiringDryRun ||
		fs[0].Reason != "would run scenario restart on inc with input map[host:h1]" {
		t.Fatalf("dry run: runs %v, firings %+v", h.rec.runs, fs)
	}

	h = newHarness(t, healRule(t, guard), nil)
	if err := h.st.PutRulePause(context.Background(), store.RulePause{Rule: "inc/heal", By: "a"}); err != nil {
		t.Fatal(err)
	}
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2))
	if got := h.decisions(t); got["suppressed:paused"] != 1 || len(h.rec.runs) != 0 {
		t.Fatalf("paused: %v", got)
	}
	if err := h.st.DeleteRulePause(context.Background(), "inc/heal"); err != nil {
		t.Fatal(err)
	}
	h.e.Invalidate("")
	h.process(h.e.take()...)
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2))
	if len(h.rec.runs) != 1 {
		t.Fatalf("resumed: runs %v", h.rec.runs)
	}

	h = newHarness(t, healRule(t, guard), func(context.Context, string) error { return errors.New("Archon archon-1 is disabled") })
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2))
	fs, _ = h.st.ListFirings(context.Background(), store.FiringFilter{})
	if len(h.rec.runs) != 0 || fs[0].Reason != store.SuppressedOwner || fs[0].Error != "Archon archon-1 is disabled" {
		t.Fatalf("owner refused: %+v", fs)
	}
}

func TestFiredRecordsRun(t *testing.T) {
	h := newHarness(t, healRule(t, guard), nil)
	h.process(h.health("inc", "h1", "OK", "CRITICAL", 2))
	fs, _ := h.st.ListFirings(context.Background(), store.FiringFilter{})
	if len(fs) != 1 || fs[0].RunID != "run-1" || fs[0].Owner != "archon-1" || fs[0].Event["sid"] != "h1" || fs[0].IncidentKey != "inc/daemon/h1" {
		t.Fatalf("firing = %+v", fs)
	}
	if r, _ := h.st.RunRule(context.Background(), "run-1"); r != "inc/heal" {
		t.Fatalf("RunRule = %q", r)
	}
}
