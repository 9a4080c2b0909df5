package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

// soulReads is the real store, counting the SIDs whose soulprints were
// read (GetSouls, ListSouls) and those read without them (GetSoulsBrief).
type soulReads struct {
	store.Store
	mu          sync.Mutex
	full, brief []string
}

func (s *soulReads) ListSouls(ctx context.Context, f store.SoulFilter) ([]store.Soul, error) {
	souls, err := s.Store.ListSouls(ctx, f)
	s.mu.Lock()
	for _, so := range souls {
		if f.Brief {
			s.brief = append(s.brief, so.SID)
		} else {
			s.full = append(s.full, so.SID)
		}
	}
	s.mu.Unlock()
	return souls, err
}

func (s *soulReads) GetSouls(ctx context.Context, sids []string) ([]store.Soul, error) {
	s.mu.Lock()
	s.full = append(s.full, sids...)
	s.mu.Unlock()
	return s.Store.GetSouls(ctx, sids)
}

func (s *soulReads) GetSoulsBrief(ctx context.Context, sids []string) ([]store.Soul, error) {
	s.mu.Lock()
	s.brief = append(s.brief, sids...)
	s.mu.Unlock()
	return s.Store.GetSoulsBrief(ctx, sids)
}

// reads returns the SIDs read with and without soulprints since the last
// call, sorted.
func (s *soulReads) reads() (full, brief []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	full, brief = slices.Sorted(slices.Values(s.full)), slices.Sorted(slices.Values(s.brief))
	s.full, s.brief = nil, nil
	return full, brief
}

const factsHosts = `
hosts:
  - {sid: a, covens: [app, db], facts: {role: primary, addr: 10.0.0.1}}
  - {sid: b, covens: [app], facts: {role: replica, addr: 10.0.0.2}}
  - {sid: c, covens: [app], facts: {role: replica, addr: 10.0.0.3}}
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`

// factsWorld is a world whose runs go through a second engine over the
// world's real store wrapped in soulReads; it returns that engine too.
func factsWorld(t *testing.T, scenario string) (*world, *soulReads, func() store.Run, *engine.Engine) {
	t.Helper()
	svc := loadService(t, map[string]string{"scenario/s/main.yml": scenario})
	w := newWorld(t, svc, "s", factsHosts)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.file.line", Results: []domain.Result{{Changed: true}}}})
	st := &soulReads{Store: w.Store}
	k := w.engineOver(st)
	run := func() store.Run {
		t.Helper()
		id, err := k.StartRun(w.ctx, "test", "s", nil, false, "")
		if err != nil {
			t.Fatal(err)
		}
		r := w.waitOn(k, id)
		if r.Status != store.RunSucceeded {
			t.Fatalf("run %s: %s %q", id, r.Status, r.Error)
		}
		return r
	}
	return w, st, run, k
}

// linesByHost returns the line param of each call of task since the last
// reset of the simulated hosts' calls.
func linesByHost(w *world, task string) map[string]any {
	out := map[string]any{}
	for sid, cs := range callsTo(w.Sim.Calls(), task) {
		out[sid] = cs[len(cs)-1].Params["line"]
	}
	return out
}

// TestRunWithoutFactsReadsNoSoulprint: a scenario none of whose
// expressions or templates reads facts starts and runs without a soulprint
// being read (at 10,000+ members that decoding was most of a run's
// preparation), and its targeting and delegation by coven (checked against
// the known covens at start), which need no soulprint, still hold;
// creating an incarnation reads none either.
func TestRunWithoutFactsReadsNoSoulprint(t *testing.T) {
	w, st, run, k := factsWorld(t, `
tasks:
  - name: mark
    module: core.file.line
    on: [db]
    params: {path: /etc/marker, line: "run ${ run.id } on ${ incarnation.name }"}
  - name: rolling
    serial: 1
    block:
      - name: note
        module: core.file.line
        delegate: [db]
        params: {path: /etc/notes, line: noted}
`)
	run()
	full, brief := st.reads()
	if len(full) != 0 {
		t.Errorf("soulprints read for %v, want none", full)
	}
	if len(brief) == 0 {
		t.Error("the members' covens were not read")
	}
	if got := linesByHost(w, "mark"); len(got) != 1 || got["a"] == nil {
		t.Errorf("calls of mark: %v, want one on a (the only host in coven db)", got)
	}
	if got := callsTo(w.Sim.Calls(), "note"); len(got) != 1 || len(got["a"]) != 3 {
		t.Errorf("calls of note: %v, want three on a (the delegate in coven db, once per member)", got)
	}

	// Creating an incarnation lists its members by coven, without their
	// soulprints either.
	id, err := k.CreateIncarnation(w.ctx, engine.CreateRequest{Name: "made", Service: "app", Covens: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	if r, err := k.Wait(ctx, id); err != nil || r.Status != store.RunSucceeded {
		t.Fatalf("create: %s %q (%v)", r.Status, r.Error, err)
	}
	full, brief = st.reads()
	if len(full) != 0 {
		t.Errorf("create: soulprints read for %v, want none", full)
	}
	if inc, err := w.Store.GetIncarnation(w.ctx, "made"); err != nil || !slices.Equal(inc.Members, []string{"a", "b", "c"}) {
		t.Errorf("created incarnation: members %v (%v), want [a b c]", inc.Members, err)
	}
}

// TestRunReadsTheFactsItUses: a scenario reading its host's facts and
// other hosts' facts reads the members' soulprints and gets their values;
// a soulprint updated between two runs is seen by the second run.
func TestRunReadsTheFactsItUses(t *testing.T) {
	w, st, run, _ := factsWorld(t, `
tasks:
  - name: self
    module: core.file.line
    params: {path: /etc/role, line: "${ soulprint.self.role } ${ soulprint.self.addr }"}
  - name: primary
    module: core.file.line
    params:
      path: /etc/primary
      line: "${ soulprint.where(\"self.role == 'primary'\").map(h, h.addr).join(',') } of ${ soulprint.hosts.size() }"
`)
	run()
	full, brief := st.reads()
	if want := []string{"a", "b", "c"}; !slices.Equal(full, want) || len(brief) != 0 {
		t.Errorf("soulprints read for %v (brief: %v), want %v", full, brief, want)
	}
	want := map[string]any{"a": "primary 10.0.0.1", "b": "replica 10.0.0.2", "c": "replica 10.0.0.3"}
	if got := linesByHost(w, "self"); !equalMaps(got, want) {
		t.Errorf("soulprint.self lines: %v, want %v", got, want)
	}
	want = map[string]any{"a": "10.0.0.1 of 3", "b": "10.0.0.1 of 3", "c": "10.0.0.1 of 3"}
	if got := linesByHost(w, "primary"); !equalMaps(got, want) {
		t.Errorf("other hosts' facts: %v, want %v", got, want)
	}

	// b becomes the primary, a a replica with a new address.
	now := time.Now()
	if err := w.Store.UpdateSoulprint(w.ctx, "a", map[string]any{"role": "replica", "addr": "10.0.1.1"}, now); err != nil {
		t.Fatal(err)
	}
	if err := w.Store.UpdateSoulprint(w.ctx, "b", map[string]any{"role": "primary", "addr": "10.0.0.2"}, now); err != nil {
		t.Fatal(err)
	}
	run()
	want = map[string]any{"a": "replica 10.0.1.1", "b": "primary 10.0.0.2", "c": "replica 10.0.0.3"}
	if got := linesByHost(w, "self"); !equalMaps(got, want) {
		t.Errorf("second run, soulprint.self lines: %v, want %v", got, want)
	}
	want = map[string]any{"a": "10.0.0.2 of 3", "b": "10.0.0.2 of 3", "c": "10.0.0.2 of 3"}
	if got := linesByHost(w, "primary"); !equalMaps(got, want) {
		t.Errorf("second run, other hosts' facts: %v, want %v", got, want)
	}
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
