// Package rules is the Keeper's event-driven operations (SPEC §17): events
// (health changes, drift, run ends, souls coming and going, missed
// schedule ticks) are published onto a bus that never blocks the
// publisher and never drops an event; a single worker matches them
// against the Keeper-wide rules and the rules/<name>.yml of the event's
// incarnation, applies the guardrails (kill switch, incident
// deduplication, cooldown, hourly and concurrent maxima, the owner's
// role, dry run), records every decision in the store in one transaction
// per batch, and starts the actions as the rule's owner.
package rules

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/store"
)

// Event is one thing that happened. Fields are what rules see as event.*
// (besides kind and time, which are filled in).
type Event struct {
	Kind        string
	Incarnation string // "" for events of no incarnation
	Fields      map[string]any
	Time        time.Time
}

// Notification is what a notify action sends (never a secret: rules
// cannot read secrets, and the notifier masks secret values anyway).
type Notification struct {
	Rule    string         `json:"rule"`
	Subject string         `json:"subject"`
	Message string         `json:"message"`
	Event   map[string]any `json:"event"`
	At      time.Time      `json:"at"`
}

// Actions are what firings do; the Keeper implements them with its run
// engine, Checker and notifier. Every call acts for archonID.
type Actions interface {
	StartRun(ctx context.Context, incarnation, scenario string, input map[string]any, check bool, archonID string) (string, error)
	ExecuteProcedure(ctx context.Context, name string, vars map[string]any, archonID string) ([]string, error)
	// WaitTasks returns when the Checker tasks ended (a procedure
	// firing's concurrency slot is held until then).
	WaitTasks(ctx context.Context, ids []string)
	Notify(ctx context.Context, endpoints []string, n Notification, firingID int64) error
}

// ServiceRules returns the rules of an incarnation's service at its pinned
// commit, the service's name, and the Archon its rules act for (the one
// who created the incarnation).
type ServiceRules func(ctx context.Context, incarnation string) (service string, rules map[string]*dsl.Rule, owner string, err error)

// OwnerCheck refuses an owner that may not act: unknown, disabled, or
// whose role does not allow runs and procedures.
type OwnerCheck func(ctx context.Context, archonID string) error

// Config configures an Engine.
type Config struct {
	Store    store.Store
	Services ServiceRules
	Actions  Actions
	Owner    OwnerCheck
	Logger   *slog.Logger
	Now      func() time.Time
	// BatchSize bounds the events handled (and decisions written) per
	// store transaction; 0 means 512.
	BatchSize int
}

// Engine matches events against rules.
type Engine struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	queue  []Event
	wake   chan struct{}
	closed bool

	// Owned by the worker (and tests through Process).
	state    map[string]*ruleState // by rule id
	keeper   map[string]keeperRule
	services map[string]serviceEntry // by incarnation
	paused   map[string]bool

	runMu   sync.Mutex
	runRule map[string]runFiring // apply_id → the firing that started it

	stats   Stats
	statsMu sync.Mutex
	wg      sync.WaitGroup
}

type keeperRule struct {
	rule  *dsl.Rule
	owner string
}

type serviceEntry struct {
	service string
	rules   map[string]*dsl.Rule
	owner   string
	err     error
}

type runFiring struct {
	rule  string
	state *ruleState
}

// Stats counts what the engine did since it started.
type Stats struct {
	Events     int64 `json:"events"`
	Fired      int64 `json:"fired"`
	DryRun     int64 `json:"dry_run"`
	Suppressed int64 `json:"suppressed"`
	Failed     int64 `json:"failed"`
	Resolved   int64 `json:"resolved"`
	Queued     int   `json:"queued"`
}

// New builds an Engine; Run works its queue.
func New(cfg Config) *Engine {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 512
	}
	return &Engine{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1),
		state: map[string]*ruleState{}, services: map[string]serviceEntry{}, paused: map[string]bool{},
		runRule: map[string]runFiring{}}
}

// Publish queues an event. It never blocks and never drops: the queue
// grows while the worker catches up (a storm costs memory, not events).
func (e *Engine) Publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = e.cfg.Now()
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, ev)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Invalidate forgets the cached rules of an incarnation (its commit or
// members changed) and, with "", the Keeper-wide rules and pauses.
func (e *Engine) Invalidate(incarnation string) {
	e.Publish(Event{Kind: kindInvalidate, Incarnation: incarnation})
}

const kindInvalidate = "internal.invalidate"

// Run works the queue until ctx ends, then waits for the actions it
// started to be recorded.
func (e *Engine) Run(ctx context.Context) {
	defer e.wg.Wait()
	for {
		select {
		case <-ctx.Done():
			e.mu.Lock()
			e.closed = true
			e.mu.Unlock()
			return
		case <-e.wake:
		}
		for {
			batch := e.take()
			if len(batch) == 0 {
				break
			}
			e.Process(ctx, batch)
		}
	}
}

func (e *Engine) take() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := min(len(e.queue), e.cfg.BatchSize)
	batch := e.queue[:n:n]
	e.queue = e.queue[n:]
	if len(e.queue) == 0 {
		e.queue = nil
	}
	return batch
}

// Stats returns the counters.
func (e *Engine) Stats() Stats {
	e.statsMu.Lock()
	s := e.stats
	e.statsMu.Unlock()
	e.mu.Lock()
	s.Queued = len(e.queue)
	e.mu.Unlock()
	return s
}

// RuleOfRun returns the rule that started a run ("" when none): the
// engine's memory first, else the recorded firings.
func (e *Engine) RuleOfRun(ctx context.Context, runID string) string {
	e.runMu.Lock()
	rf, ok := e.runRule[runID]
	e.runMu.Unlock()
	if ok {
		return rf.rule
	}
	r, err := e.cfg.Store.RunRule(ctx, runID)
	if err != nil {
		return ""
	}
	return r
}

// RunEnded frees the concurrency slot the run held and returns the rule
// that started it ("" when none). The Keeper calls it before publishing
// the run.ended event.
func (e *Engine) RunEnded(ctx context.Context, runID string) string {
	e.runMu.Lock()
	rf, ok := e.runRule[runID]
	delete(e.runRule, runID)
	e.runMu.Unlock()
	if !ok {
		return e.RuleOfRun(ctx, runID)
	}
	rf.state.release()
	return rf.rule
}

// ID is the id of a rule: keeper/<name> for Keeper-wide rules,
// <incarnation>/<name> for a service rule on one incarnation.
func ID(incarnation, name string) string {
	if incarnation == "" {
		return "keeper/" + name
	}
	return incarnation + "/" + name
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprint(err)
}
