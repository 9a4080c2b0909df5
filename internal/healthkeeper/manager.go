// Package healthkeeper is the Keeper's side of health checks (SPEC §14.1):
// it tells each connected soul which checks to run (rendered from the
// incarnations' health/ files), takes their reports, keeps the current
// state per (incarnation, check, host) and a bounded history of
// transitions in the store with batched writes, and publishes transitions
// and Prometheus counts.
package healthkeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/store"
)

// Defaults of Config.
const (
	DefaultFlushInterval  = 2 * time.Second
	DefaultResyncInterval = time.Minute
	DefaultHistoryKeep    = 1000
	DefaultHistoryMaxAge  = 7 * 24 * time.Hour
	// DefaultStaleAfter is how long a host may stay silent before its
	// checks show stale: three summaries plus slack.
	DefaultStaleAfter = 3*health.DefaultSummaryInterval + 30*time.Second
	// historyLimit transitions of one check on one host within
	// historyWindow are stored one by one; beyond, they are counted.
	historyLimit  = 10
	historyWindow = 10 * time.Minute
)

// ServiceLoader opens a service at a commit (the catalog).
type ServiceLoader interface {
	Open(ctx context.Context, name, commit string) (*dsl.Service, error)
}

// Config configures a Manager.
type Config struct {
	Store    store.Store
	Services ServiceLoader
	// Send queues a health assignment to a soul connected here; Connected
	// lists them.
	Send      func(sid string, assignment []byte) bool
	Connected func() []string
	Registry  prometheus.Registerer
	Logger    *slog.Logger
	// FlushInterval batches writes; ResyncInterval recomputes every
	// connected soul's checks (a run changed state, members changed).
	FlushInterval, ResyncInterval time.Duration
	// HistoryKeep transitions per incarnation, none older than
	// HistoryMaxAge.
	HistoryKeep   int
	HistoryMaxAge time.Duration
	// OnChange, when set, receives every transition and every
	// confirmation a soul reports (the rules' health.changed event, SPEC
	// §17), outside the manager's lock; it must not block.
	OnChange func(Change)
}

// Change is a transition of a check on a host, or a confirmation of it
// (the same status reported again: Streak 2, 3).
type Change struct {
	Incarnation, Check, SID string
	From, To, Message       string
	Streak                  int
	// Duration is how long the check had been in From.
	Duration time.Duration
	Time     time.Time
}

// Manager is the Keeper's health check service.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	events  *broker

	mu       sync.Mutex
	dirty    map[string]bool              // SIDs whose assignment is to be recomputed
	sent     map[string]uint64            // hash of the assignment last sent, by SID
	states   map[string]store.HealthState // by incarnation/check/sid: what is known
	history  map[string][]time.Time       // recent stored transitions per key
	lastFrom map[string]Change            // the last transition per key (confirmations repeat it)
	pending  []store.HealthState
	trans    []store.HealthTransition
	vitals   map[string]store.Vitals
	waiters  map[string]*afterRun // by run id
	kick     chan struct{}
	retainAt bool // the next assignDirty also prunes removed checks/members
	runCtx   context.Context
	bg       sync.WaitGroup          // goroutines started by Go
	stopped  bool                    // Run ended: Go starts nothing more
	services map[string]*dsl.Service // by name@commit
}

// New returns a Manager; Run drives it.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Services == nil || cfg.Send == nil || cfg.Connected == nil {
		return nil, errors.New("healthkeeper.New: Store, Services, Send and Connected are required")
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.HistoryKeep <= 0 {
		cfg.HistoryKeep = DefaultHistoryKeep
	}
	if cfg.HistoryMaxAge <= 0 {
		cfg.HistoryMaxAge = DefaultHistoryMaxAge
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: log, events: newBroker(),
		dirty: map[string]bool{}, sent: map[string]uint64{}, states: map[string]store.HealthState{},
		history: map[string][]time.Time{}, lastFrom: map[string]Change{}, vitals: map[string]store.Vitals{}, waiters: map[string]*afterRun{},
		kick: make(chan struct{}, 1), services: map[string]*dsl.Service{}}
	m.metrics = newMetrics(cfg.Registry, cfg.Store)
	return m, nil
}

// OnWelcome marks a newly connected soul for an assignment.
func (m *Manager) OnWelcome(sid string) {
	m.mu.Lock()
	m.dirty[sid] = true
	delete(m.sent, sid) // a new stream: send again even if unchanged
	m.mu.Unlock()
	m.poke()
}

// Resync marks every connected soul for a recomputation (after a run, a
// membership change).
func (m *Manager) Resync() {
	m.mu.Lock()
	for _, sid := range m.cfg.Connected() {
		m.dirty[sid] = true
	}
	m.mu.Unlock()
	m.poke()
}

func (m *Manager) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Run assigns checks, flushes batched writes and prunes the history until
// ctx ends, then flushes once more.
func (m *Manager) Run(ctx context.Context) {
	m.mu.Lock()
	m.runCtx = ctx
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.stopped = true
		m.mu.Unlock()
		m.bg.Wait()
	}()
	if sts, err := m.cfg.Store.ListHealthStates(ctx, ""); err != nil {
		m.log.Warn("reading the stored health states", "err", err)
	} else {
		m.mu.Lock()
		for _, st := range sts {
			m.states[st.Incarnation+"/"+st.Check+"/"+st.SID] = st
		}
		m.mu.Unlock()
	}
	flush := time.NewTicker(m.cfg.FlushInterval)
	defer flush.Stop()
	resync := time.NewTicker(m.cfg.ResyncInterval)
	defer resync.Stop()
	prune := time.NewTicker(10 * time.Minute)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			m.flush(fctx)
			cancel()
			return
		case <-m.kick:
			m.assignDirty(ctx)
		case <-resync.C:
			m.mu.Lock()
			m.services = map[string]*dsl.Service{}
			m.retainAt = true
			m.mu.Unlock()
			m.Resync()
		case <-flush.C:
			m.flush(ctx)
		case <-prune.C:
			if n, err := m.cfg.Store.PruneHealthTransitions(ctx, m.cfg.HistoryKeep, time.Now().Add(-m.cfg.HistoryMaxAge)); err != nil {
				m.log.Warn("pruning health transitions", "err", err)
			} else if n > 0 {
				m.log.Debug("pruned health transitions", "count", n)
			}
		}
	}
}

// Go runs fn in a goroutine the Manager owns: its context ends when Run's
// does, and Run waits for it before returning.
func (m *Manager) Go(fn func(ctx context.Context)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	ctx := m.runCtx
	if ctx == nil {
		ctx = context.Background()
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		fn(ctx)
	}()
}

// assignDirty recomputes and sends the checks of the marked souls.
func (m *Manager) assignDirty(ctx context.Context) {
	m.mu.Lock()
	sids := slices.Sorted(maps.Keys(m.dirty))
	m.dirty = map[string]bool{}
	retain := m.retainAt
	m.retainAt = false
	m.mu.Unlock()
	if len(sids) == 0 && !retain {
		return
	}
	m.assign(ctx, sids, retain)
}

// assign computes the checks of souls sids and sends those that changed;
// with retain it also prunes the stored states of removed checks and
// members. Only souls in an incarnation whose service declares health
// checks have their soulprint read (a 50,000-soul fleet without checks
// costs no JSON decoding); the others are assigned no checks.
func (m *Manager) assign(ctx context.Context, sids []string, retain bool) {
	incs, err := m.cfg.Store.ListIncarnations(ctx)
	if err != nil {
		m.log.Warn("listing incarnations for health checks", "err", err)
		return
	}
	withChecks := m.checkedIncarnations(ctx, incs)
	var need, none []string
	for _, sid := range sids {
		if slices.ContainsFunc(withChecks, func(c checkedInc) bool { return c.members[sid] }) {
			need = append(need, sid)
		} else {
			none = append(none, sid)
		}
	}
	var souls []store.Soul
	if len(need) > 0 {
		if souls, err = m.cfg.Store.GetSouls(ctx, need); err != nil {
			m.log.Warn("reading souls for health checks", "err", err)
			return
		}
	}
	for _, s := range souls {
		m.send(s.SID, m.checksFor(ctx, s, withChecks))
	}
	for _, sid := range none {
		m.send(sid, []health.Check{})
	}
	if retain {
		for _, inc := range incs {
			m.retain(ctx, inc)
		}
	}
}

// send sends sid its checks unless the same assignment was sent last.
func (m *Manager) send(sid string, checks []health.Check) {
	b, err := json.Marshal(health.Assignment{Checks: checks})
	if err != nil {
		return
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	sum := h.Sum64()
	m.mu.Lock()
	last, sent := m.sent[sid]
	m.mu.Unlock()
	if sent && last == sum {
		return
	}
	if m.cfg.Send(sid, b) {
		m.mu.Lock()
		m.sent[sid] = sum
		m.mu.Unlock()
	}
}

// checkedInc is an incarnation whose service declares health checks, with
// its members as a set.
type checkedInc struct {
	inc     store.Incarnation
	svc     *dsl.Service
	members map[string]bool
}

// checkedIncarnations returns the incarnations among incs whose service
// (at their commit) declares health checks.
func (m *Manager) checkedIncarnations(ctx context.Context, incs []store.Incarnation) []checkedInc {
	var out []checkedInc
	for _, inc := range incs {
		if inc.Commit == "" || len(inc.Members) == 0 {
			continue
		}
		svc, err := m.service(ctx, inc.Service, inc.Commit)
		if err != nil {
			m.log.Warn("loading a service for its health checks", "incarnation", inc.Name, "err", err)
			continue
		}
		if len(svc.Health) == 0 {
			continue
		}
		members := make(map[string]bool, len(inc.Members))
		for _, sid := range inc.Members {
			members[sid] = true
		}
		out = append(out, checkedInc{inc: inc, svc: svc, members: members})
	}
	return out
}

// service opens a service at a commit, cached until the next resync.
func (m *Manager) service(ctx context.Context, name, commit string) (*dsl.Service, error) {
	key := name + "@" + commit
	m.mu.Lock()
	svc := m.services[key]
	m.mu.Unlock()
	if svc != nil {
		return svc, nil
	}
	svc, err := m.cfg.Services.Open(ctx, name, commit)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.services[key] = svc
	m.mu.Unlock()
	return svc, nil
}

// checksFor renders the checks of every incarnation soul s is a member of.
func (m *Manager) checksFor(ctx context.Context, s store.Soul, incs []checkedInc) []health.Check {
	out := []health.Check{}
	facts := s.Facts()
	facts["sid"] = s.SID
	for _, ci := range incs {
		if !ci.members[s.SID] {
			continue
		}
		inc, svc := ci.inc, ci.svc
		act := activation(svc, inc).ForHost(s.SID, facts)
		for _, name := range slices.Sorted(maps.Keys(svc.Health)) {
			hc := svc.Health[name]
			c, ok, err := render(ctx, hc, inc.Name, s.Covens, act)
			if err != nil {
				m.log.Warn("health check not assigned", "incarnation", inc.Name, "check", name, "sid", s.SID, "err", err)
				continue
			}
			if ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// activation is what a health check's where: and params see.
func activation(svc *dsl.Service, inc store.Incarnation) *expr.Activation {
	covens := make([]any, len(inc.Covens))
	for i, c := range inc.Covens {
		covens[i] = c
	}
	members := make([]any, len(inc.Members))
	for i, sid := range inc.Members {
		members[i] = sid
	}
	return &expr.Activation{
		Essence:   svc.Essence(inc.Covens, inc.Name, inc.Essence),
		Registers: expr.NewRegisters(),
		Incarnation: map[string]any{"name": inc.Name, "host_count": int64(len(inc.Members)), "covens": covens,
			"status": inc.Status, "members": members},
		State: inc.State,
	}
}

// render targets and renders one check for a host; ok is false when on: or
// where: leave the host out.
func render(ctx context.Context, hc *dsl.HealthCheck, incarnation string, covens []string, act *expr.Activation) (health.Check, bool, error) {
	if hc.On != nil {
		for _, c := range hc.On.Covens {
			if !slices.Contains(covens, c) {
				return health.Check{}, false, nil
			}
		}
	}
	env := expr.ForKind(expr.KindScenario)
	if hc.Where != "" {
		prog, err := env.CompileBool(hc.Where)
		if err != nil {
			return health.Check{}, false, fmt.Errorf("where: %w", err)
		}
		ok, err := prog.EvalBool(ctx, act)
		if err != nil {
			return health.Check{}, false, fmt.Errorf("where: %w", err)
		}
		if !ok {
			return health.Check{}, false, nil
		}
	}
	params, err := env.RenderMap(ctx, hc.Params, act)
	if err != nil {
		return health.Check{}, false, fmt.Errorf("params: %w", err)
	}
	return health.Check{Incarnation: incarnation, Name: hc.Name, Module: hc.Module, Params: params,
		Every: hc.Every, Timeout: hc.Timeout, AfterRuns: hc.AfterRuns}, true, nil
}

// retain drops stored states of checks removed from the repo or members
// removed from the incarnation.
func (m *Manager) retain(ctx context.Context, inc store.Incarnation) {
	svc, err := m.service(ctx, inc.Service, inc.Commit)
	if err != nil {
		return
	}
	checks := slices.Sorted(maps.Keys(svc.Health))
	if _, err := m.cfg.Store.RetainHealthStates(ctx, inc.Name, checks, inc.Members); err != nil {
		m.log.Warn("pruning health states", "incarnation", inc.Name, "err", err)
		return
	}
	members := make(map[string]bool, len(inc.Members))
	for _, sid := range inc.Members {
		members[sid] = true
	}
	m.mu.Lock()
	for k, st := range m.states {
		if st.Incarnation == inc.Name && (!slices.Contains(checks, st.Check) || !members[st.SID]) {
			delete(m.states, k)
		}
	}
	m.mu.Unlock()
}
