package scenariotest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// fakeCommit is the commit the simulated service is pinned at.
const fakeCommit = "0000000000000000000000000000000000000000"

// KeeperID is the keeper the simulated runs belong to.
const KeeperID = "scenario-test"

// Harness is the offline world of one test: a fresh SQLite store, the
// simulated hosts, and a real engine over them. Engine tests use it
// directly; Run drives it for one test file.
type Harness struct {
	Store   store.Store
	Sim     *dispatch.Sim
	Engine  *engine.Engine
	Service *dsl.Service
	Test    *Test
}

// Options tune a Harness.
type Options struct {
	// DefaultTimeout of tasks without timeout: (1s when zero: simulated
	// hosts answer at once).
	DefaultTimeout time.Duration
	// OutputCap of stored results (the engine's default when zero).
	OutputCap int
	// Metrics, when set, receives the engine's run and task outcomes.
	Metrics *engine.Metrics
	// Logger, when set, receives the engine's log (nil discards it).
	Logger *slog.Logger
	// MaxLoopItems is the engine's loop item limit (its default when 0).
	MaxLoopItems int
}

// staticServices serves the one service under test at any commit.
type staticServices struct{ svc *dsl.Service }

func (s staticServices) Open(context.Context, string, string) (*dsl.Service, error) {
	return s.svc, nil
}

// NewHarness opens a store in dir (which must exist and be private to the
// harness), registers the test's hosts as souls and the service, and
// starts an engine over the simulated transport. The incarnation is not
// created: Start does that. Close releases everything.
func NewHarness(ctx context.Context, dir string, svc *dsl.Service, t *Test, o Options) (*Harness, error) {
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		return nil, fmt.Errorf("opening the test store: %w", err)
	}
	h := &Harness{Store: st, Service: svc, Test: t}
	if err := h.seed(ctx); err != nil {
		st.Close()
		return nil, err
	}
	hosts := []dispatch.SimHost{{SID: dispatch.KeeperSID, Facts: map[string]any{}}}
	for _, x := range t.Hosts {
		hosts = append(hosts, dispatch.SimHost{SID: x.SID, Facts: x.Facts, Down: x.Disconnected})
	}
	h.Sim = dispatch.NewSim(hosts, t.Stubs)
	h.Sim.RunBundle = runBundle
	if o.DefaultTimeout == 0 {
		o.DefaultTimeout = time.Second
	}
	// A secret store with a key of this test only: state keys declared
	// secret: true are sealed as on a Keeper; secret("name") finds no
	// secret (a scenario test sets none).
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		st.Close()
		return nil, err
	}
	sec, err := secrets.New(st, key)
	if err != nil {
		st.Close()
		return nil, err
	}
	h.Engine, err = engine.New(engine.Config{
		Store: st, Dispatcher: h.Sim, Local: h.Sim, Services: staticServices{svc}, Secrets: sec,
		KeeperID: KeeperID, DefaultTimeout: o.DefaultTimeout, OutputCap: o.OutputCap, Metrics: o.Metrics, Logger: o.Logger,
		MaxLoopItems: o.MaxLoopItems,
		// Simulated time: retry delays pass at once.
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	return h, nil
}

// runBundle runs a destiny bundle on a simulated host with the real
// destiny executor, its module calls answered by the stubs.
func runBundle(ctx context.Context, b *dispatch.Bundle, facts map[string]any, check bool,
	call func(context.Context, dispatch.Call, bool, time.Duration) domain.Result) domain.Result {
	return executor.RunBundle(ctx, b, facts, executor.Options{Check: check, Call: call, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
}

func (h *Harness) seed(ctx context.Context) error {
	now := time.Now().UTC()
	for _, x := range h.Test.Hosts {
		status := store.SoulConnected
		if x.Disconnected {
			status = store.SoulDisconnected
		}
		facts := x.Facts
		if facts == nil {
			facts = map[string]any{}
		}
		if err := h.Store.UpsertSoul(ctx, store.Soul{SID: x.SID, Status: status, Covens: x.Covens, Soulprint: facts, LastSeen: now}); err != nil {
			return fmt.Errorf("registering host %s: %w", x.SID, err)
		}
	}
	name := h.Service.Manifest.Name
	if name == "" {
		name = "service"
	}
	return h.Store.CreateService(ctx, store.Service{Name: name, Git: "file:///scenario-test/" + name, Ref: "test", Commit: fakeCommit})
}

// Start creates the incarnation and starts the test's scenario on it; it
// returns the apply_id. The create scenario goes through
// Engine.CreateIncarnation (members computed from the covens); any other
// scenario runs on an incarnation set up ready with the test's members
// (default: every host carrying all incarnation covens), state and pending
// triggers.
func (h *Harness) Start(ctx context.Context) (string, error) {
	t := h.Test
	svcName := h.Service.Manifest.Name
	if svcName == "" {
		svcName = "service"
	}
	if t.Scenario == engine.CreateScenario {
		return h.Engine.CreateIncarnation(ctx, engine.CreateRequest{
			Name: t.Incarnation.Name, Service: svcName, Covens: t.Incarnation.Covens,
			Input: t.Input, Essence: t.Essence,
		})
	}
	members := t.Incarnation.Members
	if members == nil {
		for _, x := range t.Hosts {
			if hasAll(x.Covens, t.Incarnation.Covens) {
				members = append(members, x.SID)
			}
		}
	}
	inc := store.Incarnation{
		Name: t.Incarnation.Name, Service: svcName, Ref: "test", Commit: fakeCommit,
		Covens: t.Incarnation.Covens, Essence: t.Essence, Members: members,
	}
	setup := store.Run{ID: "setup", Scenario: engine.CreateScenario, Status: store.RunRunning}
	if err := h.Store.CreateIncarnation(ctx, inc, setup); err != nil {
		return "", fmt.Errorf("creating the incarnation: %w", err)
	}
	state := t.Incarnation.State
	if state == nil {
		state = map[string]any{}
	}
	if err := h.Store.CommitRun(ctx, setup.ID, state, store.Snapshot{}, time.Now()); err != nil {
		return "", fmt.Errorf("setting the incarnation's state: %w", err)
	}
	var trs []store.PendingTrigger
	for _, tr := range t.Incarnation.Triggers {
		trs = append(trs, store.PendingTrigger{Incarnation: inc.Name, Scenario: t.Scenario, Task: triggerKey(h.Service.Scenarios[t.Scenario], tr.Task), SID: tr.SID, RunID: setup.ID})
	}
	if len(trs) > 0 {
		if err := h.Store.AddTriggers(ctx, trs); err != nil {
			return "", fmt.Errorf("adding pending triggers: %w", err)
		}
	}
	return h.Engine.StartRun(ctx, inc.Name, t.Scenario, t.Input, t.Check, "")
}

// Close stops the engine (cancelling what still runs) and closes the store.
func (h *Harness) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(h.Engine.Close(ctx), h.Store.Close())
}

// Outcome is the result of running one test.
type Outcome struct {
	Test *Test
	// Failures are the expectations that did not hold, one line each.
	Failures []string
	// Err is set when the test could not run at all.
	Err      error
	Run      store.Run
	Results  []store.HostResult
	Duration time.Duration
}

// Passed reports whether the test ran and every expectation held.
func (o Outcome) Passed() bool { return o.Err == nil && len(o.Failures) == 0 }

// Run runs one test in a fresh store under dir and checks its
// expectations.
func Run(ctx context.Context, dir string, svc *dsl.Service, t *Test) (out Outcome) {
	start := time.Now()
	out.Test = t
	defer func() { out.Duration = time.Since(start) }()
	h, err := NewHarness(ctx, dir, svc, t, Options{})
	if err != nil {
		out.Err = err
		return out
	}
	defer h.Close()
	id, err := h.Start(ctx)
	if err != nil {
		out.Err = fmt.Errorf("the run did not start: %w", err)
		return out
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out.Run, err = h.Engine.Wait(wctx, id)
	if err != nil {
		out.Err = fmt.Errorf("waiting for the run: %w", err)
		return out
	}
	out.Results, err = h.Store.ListResults(ctx, id)
	if err != nil {
		out.Err = fmt.Errorf("reading the results: %w", err)
		return out
	}
	out.Failures, out.Err = h.Check(ctx, out.Run, out.Results)
	return out
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, x := range have {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}

// triggerKey is the key the engine stores a pending trigger of handler
// ref (a name or path) under.
func triggerKey(sc *dsl.Scenario, ref string) string {
	if t := findTask(sc, ref); t != nil {
		return engine.TriggerKey(sc, t)
	}
	return ref
}
