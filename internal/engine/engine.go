// Package engine is the run engine of the Keeper (SPEC §8): it creates
// incarnations, starts scenario runs, walks their tasks (targeting with
// on → where → run_once/serial, rolling waves, per-task barriers,
// requisites, fail-fast with onfail handlers, pending onchanges triggers)
// and ends every run at the commit barrier: the state is committed in one
// transaction only when every task finished on every host without failure,
// otherwise the incarnation is error_locked.
//
// The engine sees only the Dispatcher and Store interfaces: the soul
// gateway, the keeper-local runner and the simulated transport of scenario
// tests are interchangeable. Per-host task semantics (when, loop, vars,
// render, retry, check mode, changed_when/failed_when) come from package
// executor, shared with the souls' destiny runner.
//
// Crash safety (SPEC §8.5): each host's result is stored as it arrives
// (batched per run, see recorder), so a keeper that dies mid-wave keeps
// what the hosts answered; Recover aborts the runs of a dead keeper and
// records the onchanges handlers they owed as pending triggers; RecordLate
// records the results that arrive after a run stopped waiting for them.
//
// Runs execute asynchronously in goroutines owned by the Engine; Close
// waits for them.
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/tracing"
)

// ServiceLoader opens a validated service at a pinned commit (the catalog
// implements it).
type ServiceLoader interface {
	Open(ctx context.Context, name, commit string) (*dsl.Service, error)
}

// Defaults of Config.
const (
	DefaultTaskTimeout = 10 * time.Minute
	DefaultOutputCap   = 64 << 10
	DefaultFanOut      = 512
)

// Config holds the engine's dependencies and limits.
type Config struct {
	Store      store.Store         // required
	Dispatcher dispatch.Dispatcher // required: the souls
	// Local runs on: keeper tasks; nil fails them.
	Local    dispatch.Dispatcher
	Services ServiceLoader // required
	// Cloud runs core.cloud.created and core.cloud.absent (on: keeper)
	// with the incarnation's context; nil fails them.
	Cloud Cloud
	// Secrets resolves secret("name") (the Keeper's secret store); nil
	// refuses scenarios that use it.
	Secrets SecretSource
	// KeeperID owns the runs this engine starts (crash recovery aborts
	// the runs of this keeper only).
	KeeperID string
	Logger   *slog.Logger // nil discards
	// DefaultTimeout applies to tasks without timeout: (DefaultTaskTimeout
	// when zero).
	DefaultTimeout time.Duration
	// OutputCap bounds stdout, stderr, msg and diff of each stored host
	// result, in bytes (DefaultOutputCap when zero).
	OutputCap int
	// FanOut bounds the hosts of one wave worked on at once
	// (DefaultFanOut when zero).
	FanOut int
	// MaxLoopItems bounds the items of one task's loop: per host
	// (dsl.DefaultMaxLoopItems when zero; keeper.yaml runs.max_loop_items).
	MaxLoopItems int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Sleep waits between retry attempts (a real timer when nil).
	Sleep func(context.Context, time.Duration) error
	// NewID makes apply ids (random UUIDs when nil).
	NewID func() string
	// Metrics receives run and task outcomes (nil: none).
	Metrics *Metrics
	// OnRunEnd, when set, is told of every run that ended on this engine
	// (after its end is recorded); it must not block.
	OnRunEnd func(incarnation, runID, status string)
	// TaskKey signs the task ids of dispatched work, so a late result is
	// accepted only for work a keeper of this database dispatched to that
	// soul. Keepers sharing a database need the same key (the keeper
	// derives it from its TLS key); nil means a random key of this engine.
	TaskKey []byte
	// TracerProvider receives the run, task, wave and dispatch spans
	// (internal/tracing); nil means none.
	TracerProvider trace.TracerProvider
}

// Engine creates incarnations and runs scenarios. It is safe for concurrent
// use.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer

	mu     sync.Mutex
	closed bool
	runs   map[string]*liveRun
	wg     sync.WaitGroup
	late   lateQueue
	// giveUp is closed when Close stops waiting for the runs: the writes
	// that wait for an unavailable store (storeRetry) stop waiting.
	giveUp     chan struct{}
	giveUpOnce sync.Once
}

// New returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Dispatcher == nil || cfg.Services == nil {
		return nil, errors.New("engine.New: Store, Dispatcher and Services are required")
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTaskTimeout
	}
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = DefaultOutputCap
	}
	if cfg.FanOut <= 0 {
		cfg.FanOut = DefaultFanOut
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.TaskKey) == 0 {
		cfg.TaskKey = make([]byte, 32)
		if _, err := rand.Read(cfg.TaskKey); err != nil {
			return nil, fmt.Errorf("engine.New: making a task key: %w", err)
		}
	}
	return &Engine{cfg: cfg, log: log, tracer: tracing.Provider(cfg.TracerProvider).Tracer(tracing.ScopeEngine), runs: map[string]*liveRun{}, late: newLateQueue(), giveUp: make(chan struct{})}, nil
}

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// Recover is called once at keeper start, before runs are accepted (SPEC
// §8.5): every unfinished run this keeper owned is marked aborted and its
// incarnation error_locked, nothing committed. The onchanges handlers an
// aborted run owed — a task they watch changed on a host, per the results
// recorded before the crash, and the handler did not succeed there — are
// recorded as pending triggers, as for a failed run (SPEC §8.3). It
// returns the aborted runs.
func (e *Engine) Recover(ctx context.Context) ([]store.Run, error) {
	return e.AbortKeeperRuns(ctx, e.cfg.KeeperID)
}

// AbortKeeperRuns does for keeper keeperID what Recover does for this
// one: the leader calls it for a keeper that died (SPEC §10.4), whose runs
// are marked aborted and their incarnations error_locked.
func (e *Engine) AbortKeeperRuns(ctx context.Context, keeperID string) ([]store.Run, error) {
	runs, err := e.cfg.Store.AbortRuns(ctx, keeperID, e.now())
	if err != nil {
		return nil, fmt.Errorf("aborting the runs of keeper %q: %w", keeperID, err)
	}
	for _, r := range runs {
		e.log.WarnContext(ctx, "run aborted: its keeper stopped while it was running",
			"apply_id", r.ID, "incarnation", r.Incarnation, "scenario", r.Scenario, "keeper_id", keeperID)
		// The abort stands either way; a handler that could not be
		// recorded as owed is worth an error in the log.
		if err := e.settleAborted(ctx, r); err != nil {
			e.log.ErrorContext(ctx, "recording the handlers owed by an aborted run failed: check its hosts before the next run",
				"apply_id", r.ID, "incarnation", r.Incarnation, "err", err)
		}
	}
	return runs, nil
}

// errShutdown is the cancellation cause of runs still going when Close
// gives up waiting.
var errShutdown = errors.New("the keeper is shutting down")

// errCancelled is the cancellation cause of Cancel.
var errCancelled = errors.New("cancelled by an Archon")

// Close stops accepting runs and waits for the running ones. When ctx ends
// first, the remaining runs are cancelled (they end cancelled, their
// incarnations error_locked) and Close waits for them to record that.
// Then the late results received so far are recorded; later ones are
// dropped.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	defer e.closeLate()
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	e.giveUpOnce.Do(func() { close(e.giveUp) })
	e.mu.Lock()
	for _, lr := range e.runs {
		lr.cancel(errShutdown)
	}
	e.mu.Unlock()
	<-done
	return nil
}

// reserve accounts for a run about to start; the caller must call
// release, or launch the run. It fails once Close was called.
func (e *Engine) reserve() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return domain.Errorf(domain.CodeUnavailable, "the keeper is shutting down: no new runs")
	}
	e.wg.Add(1)
	return nil
}

func (e *Engine) release() { e.wg.Done() }

// Cancel cancels a run of this keeper. The run ends cancelled and (unless
// it is a check run) its incarnation error_locked, since hosts may be
// half-done. A finished run is a conflict; a run of another keeper cannot
// be cancelled from here.
func (e *Engine) Cancel(ctx context.Context, applyID string) error {
	e.mu.Lock()
	lr := e.runs[applyID]
	e.mu.Unlock()
	if lr != nil {
		lr.cancel(errCancelled)
		return nil
	}
	run, err := e.cfg.Store.GetRun(ctx, applyID)
	if err != nil {
		return fmt.Errorf("run %s: %w", applyID, err)
	}
	if run.FinishedAt != nil {
		return &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("run %s has already finished (%s)", applyID, run.Status), Details: run.Status}
	}
	return domain.Errorf(domain.CodeConflict, "run %s is executed by keeper %q, not this one (%q): cancel it there", applyID, run.KeeperID, e.cfg.KeeperID)
}

// Wait blocks until the run finished (or ctx ended) and returns its record.
func (e *Engine) Wait(ctx context.Context, applyID string) (store.Run, error) {
	e.mu.Lock()
	lr := e.runs[applyID]
	e.mu.Unlock()
	if lr != nil {
		select {
		case <-lr.done:
		case <-ctx.Done():
			return store.Run{}, ctx.Err()
		}
	}
	run, err := e.cfg.Store.GetRun(ctx, applyID)
	if err != nil {
		return store.Run{}, fmt.Errorf("run %s: %w", applyID, err)
	}
	return run, nil
}

// Subscribe streams the live events of a run executing on this engine. The
// channel ends after the final "done" event; it is closed at once when the
// run is not live here (finished, unknown, or on another keeper: read its
// record from the store instead), and early when the subscriber lags too
// far behind. stop unsubscribes; call it when done reading.
func (e *Engine) Subscribe(applyID string) (events <-chan Event, stop func()) {
	e.mu.Lock()
	lr := e.runs[applyID]
	e.mu.Unlock()
	if lr == nil {
		ch := make(chan Event)
		close(ch)
		return ch, func() {}
	}
	return lr.subscribe()
}

// Live reports whether the run is executing on this engine.
func (e *Engine) Live(applyID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[applyID] != nil
}

// launch starts r in a goroutine owned by the engine (reserve was called).
func (e *Engine) launch(r *runner) {
	ctx, cancel := context.WithCancelCause(context.Background())
	lr := newLiveRun(r.run.ID, cancel)
	lr.runner = r
	r.live = lr
	e.mu.Lock()
	e.runs[r.run.ID] = lr
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer cancel(nil)
		final := r.execute(ctx)
		e.mu.Lock()
		delete(e.runs, r.run.ID)
		e.mu.Unlock()
		lr.finish(final)
		signal(e.late.wake) // its late results may wait for its end
	}()
}

// Backoff of storeRetry.
const (
	storeRetryFirst = 50 * time.Millisecond
	storeRetryMax   = 5 * time.Second
)

// storeRetry calls write until it succeeds, fails for another reason than
// an unavailable store, or giveUp is closed (the keeper shuts down and
// stops waiting; its next start aborts the run, SPEC §8.5). The writes
// that end a run go through it: a database that is briefly away when a
// run finishes must not leave the run running and its incarnation
// applying, refusing every run and unlock until a restart.
func storeRetry(giveUp <-chan struct{}, log *slog.Logger, what string, write func() error) error {
	delay := storeRetryFirst
	for waited := false; ; {
		err := write()
		if err == nil || domain.ErrorCode(err) != domain.CodeUnavailable {
			if waited && err == nil {
				log.Info(what + ": the store is back")
			}
			return err
		}
		if !waited {
			log.Warn(what+": the store is unavailable; retrying until it is back", "err", err)
			waited = true
		}
		t := time.NewTimer(delay)
		select {
		case <-giveUp:
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, storeRetryMax)
	}
}
