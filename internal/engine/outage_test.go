package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

// outageStore is a store whose run writes fail as unavailable while down
// is set, as PostgreSQL's do while the database is away.
type outageStore struct {
	store.Store
	down atomic.Bool
}

func (s *outageStore) unavailable() error {
	return &domain.Error{Code: domain.CodeUnavailable, Message: "postgres database unavailable"}
}

func (s *outageStore) RecordResults(ctx context.Context, rs []store.HostResult) error {
	if s.down.Load() {
		return s.unavailable()
	}
	return s.Store.RecordResults(ctx, rs)
}

func (s *outageStore) CommitRun(ctx context.Context, id string, state map[string]any, snap store.Snapshot, at time.Time) error {
	if s.down.Load() {
		return s.unavailable()
	}
	return s.Store.CommitRun(ctx, id, state, snap, at)
}

func (s *outageStore) FinishRun(ctx context.Context, id, status, msg string, at time.Time) error {
	if s.down.Load() {
		return s.unavailable()
	}
	return s.Store.FinishRun(ctx, id, status, msg, at)
}

// outageOnTask takes the store down when work of task is dispatched, for
// d; the hosts answer meanwhile.
type outageOnTask struct {
	dispatch.Dispatcher
	st   *outageStore
	task string
	d    time.Duration
}

func (o *outageOnTask) Dispatch(ctx context.Context, reqs []dispatch.Request, onResult func(string, domain.Result)) map[string]domain.Result {
	if len(reqs) > 0 && reqs[0].Work.Task == o.task {
		o.st.down.Store(true)
		if o.d > 0 {
			time.AfterFunc(o.d, func() { o.st.down.Store(false) })
		}
	}
	return o.Dispatcher.Dispatch(ctx, reqs, onResult)
}

// TestStoreOutageAtTheEndOfARun: the database goes away while the last
// task runs and comes back shortly. The run waits for it: its results are
// stored, its end is recorded, the state committed — not a run left
// running and an incarnation left applying until the keeper restarts.
func TestStoreOutageAtTheEndOfARun(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}, {sid: b, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{})
	w.Sim.SetStubs([]dispatch.Stub{{Module: "core.file.present", Results: []domain.Result{{Changed: true}}}})
	st := &outageStore{Store: w.Store}
	k, err := engine.New(engine.Config{Store: st, Dispatcher: &outageOnTask{Dispatcher: w.Sim, st: st, task: "restart app", d: 300 * time.Millisecond}, Services: oneService{svc}, KeeperID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(w.ctx)
	id, err := k.StartRun(w.ctx, "test", "deploy", nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	if _, err := k.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, err := w.Store.GetRun(w.ctx, id)
	if err != nil || run.Status != store.RunSucceeded {
		t.Fatalf("run after the outage: %s %q (%v)", run.Status, run.Error, err)
	}
	if got := len(rowsOf(w.results(id), "1")); got != 2 {
		t.Errorf("%d restart rows stored, want 2", got)
	}
	if inc := w.incarnation(); inc.Status != store.IncarnationReady || inc.State["version"] != "2" {
		t.Errorf("incarnation after the outage: %s %v", inc.Status, inc.State)
	}
}

// TestStoreOutageAtShutdown: a store that stays away does not hold the
// keeper's shutdown past its deadline (the next start aborts the run).
func TestStoreOutageAtShutdown(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/deploy/main.yml": crashScenario})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: a, covens: [app]}]
incarnation: {covens: [app]}
expect: {outcome: succeeded}
`)
	w.readyIncarnation(map[string]any{})
	st := &outageStore{Store: w.Store}
	k, err := engine.New(engine.Config{Store: st, Dispatcher: &outageOnTask{Dispatcher: w.Sim, st: st, task: "render config"}, Services: oneService{svc}, KeeperID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.StartRun(w.ctx, "test", "deploy", nil, false, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := contextWithTimeout(100 * time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- k.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs while the store is unavailable")
	}
}
