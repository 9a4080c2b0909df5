// Package soul is the agent: it keeps a stream to its Keeper (dialling out
// over TLS with the Keeper's CA pinned: the lean soulstack/1 stream, or
// the Connect route over HTTP/2 with a keeper that does not offer it), proves its identity with
// its Ed25519 key, reports its soulprint, runs the work it receives with the
// module registry and streams the results back — also after a reconnect,
// for work that finished while the stream was down.
package soul

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/tracing"
	"github.com/soulstack/soulstack/internal/version"
)

// Defaults of Config's optional fields.
const (
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	// DefaultPendingInterval is how often a pending soul says hello
	// again: an Archon's accept takes effect within it, however long
	// the soul waited.
	DefaultPendingInterval = 2 * time.Second
	DefaultFactsInterval   = time.Minute
	maxMessageBytes        = 64 << 20
)

// Config configures an Agent.
type Config struct {
	// KeeperURLs are the keepers' base URLs (https): one keeper, or the
	// keepers of a fleet sharing one database and one CA. A host name
	// stands for every address it resolves to. KeeperURL, when set, is
	// one more (the first).
	KeeperURLs []string
	KeeperURL  string
	// Resolve looks keeper host names up; nil means the system resolver.
	Resolve Resolver
	// FailoverSpread bounds the random delay before a soul whose keeper
	// went away (or asked it to move) says hello to another keeper; 0
	// means DefaultFailoverSpread. It is never longer than MaxBackoff.
	FailoverSpread time.Duration
	// MoveAvoid is how long a soul asked to move keeps away from that
	// keeper while it has others; 0 means DefaultMoveAvoid.
	MoveAvoid time.Duration
	// SID is the soul's identity (required; the command defaults it to the
	// host name).
	SID string
	// DataDir keeps the key, the pinned fingerprint, the outbox and the
	// local record of the tasks run (TaskLogFile).
	DataDir string
	// JoinToken, when set, onboards the soul with the token's covens and
	// pins the keeper fingerprint it carries.
	JoinToken string
	// Fingerprint pins the keeper CA (64 hex digits); CAFile trusts a CA
	// file instead. Without either, the join token's fingerprint or the
	// one pinned in DataDir at the first join is used.
	Fingerprint string
	CAFile      string
	// Root confines file modules for the default runner ("" = real /).
	Root string
	// Logger receives the agent's events; nil discards them.
	Logger *slog.Logger
	// Runner executes work; nil means a ModuleRunner over Root and the
	// agent's facts.
	Runner Runner
	// Facts collects the soulprint; nil means CollectFacts for this host.
	Facts func() (map[string]any, error)
	// Version is reported in hello; "" means this binary's build version.
	Version string
	// FactsInterval is how often facts are recollected to detect changes;
	// 0 means DefaultFactsInterval.
	FactsInterval time.Duration
	// HealthSummaryInterval is how often the health summary is sent
	// (0 = health.DefaultSummaryInterval).
	HealthSummaryInterval time.Duration
	// VitalsInterval is how often vital signs are sent (0 =
	// DefaultVitalsInterval); Vitals collects them (nil = CollectVitals).
	VitalsInterval time.Duration
	Vitals         func(ctx context.Context) map[string]any
	// MinBackoff and MaxBackoff bound the reconnect delay (exponential,
	// with jitter); 0 means the defaults.
	MinBackoff, MaxBackoff time.Duration
	// PendingInterval is the fixed delay between hellos while the soul is
	// pending acceptance; 0 means DefaultPendingInterval.
	PendingInterval time.Duration
	// LocalAddr, when valid, is the source address the soul dials from
	// (a swarm gives each virtual soul its own loopback address, as a
	// fleet has one per host); the zero value lets the system choose.
	LocalAddr netip.Addr
	// Handshakes, when set, bounds the handshakes in flight among the
	// agents sharing it (a swarm): a slot is taken before dialling and
	// given back once the keeper answered the hello (or the attempt
	// failed), so a burst of souls arrives at the rate the keeper admits
	// them instead of timing out together.
	Handshakes chan struct{}
	// PingAfter and PingTimeout tune the lean stream's liveness probe: a
	// keeper silent for PingAfter is pinged, and the stream given up when
	// nothing arrives within PingTimeout after that. 0 means
	// DefaultPingAfter and DefaultPingTimeout.
	PingAfter, PingTimeout time.Duration
	// TracerProvider receives the span of each work's execution, a child
	// of the keeper's dispatch span (internal/tracing); nil means none.
	TracerProvider trace.TracerProvider
}

// ErrRefused is returned (wrapped) by Run when the keeper refused the soul
// for good: rejected by an Archon, or another key bound to its SID.
var ErrRefused = errors.New("keeper refused this soul")

// ErrVersion wraps the keeper's refusal of this soul's version (another
// release line, or newer than the keeper). Run does not return it: it
// logs it and says hello again after MaxBackoff, so an upgrade of either
// side heals the connection.
var ErrVersion = errors.New("keeper cannot speak to this soul's version")

// Agent is one soul's connection to its keeper and its task executor.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	key     ed25519.PrivateKey
	trust   trust
	secret  []byte // join secret; dropped after the first welcome
	runner  Runner
	outbox  *outbox
	record  *TaskLog // the local record of every task run (SPEC §10.3)
	health  *health.Scheduler
	clients connectClients // the Connect route, for keepers without the lean stream
	version string
	tracer  trace.Tracer
	// The keepers (their URLs) and how to reach them.
	dialer  *net.Dialer
	targets []*target
	resolve Resolver
	picker  picker        // used by Run only
	wake    chan struct{} // a moving stream ended with no other session: Run looks again at once
	serving sync.WaitGroup

	mu        sync.Mutex
	conn      *conn // the welcomed stream, nil while disconnected
	facts     map[string]any
	factsJSON []byte
	running   map[string]runningTask // by task id

	tasks sync.WaitGroup // running work, waited for by Run
}

// NewAgent validates cfg, loads or creates the soul key and prepares the
// keeper client. It does not dial; Run does.
func NewAgent(cfg Config) (*Agent, error) {
	if cfg.SID == "" {
		return nil, errors.New("soul: a SID is required")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("soul: a data directory is required")
	}
	urls := SplitKeeperURLs(append([]string{cfg.KeeperURL}, cfg.KeeperURLs...)...)
	if len(urls) == 0 {
		return nil, errors.New("soul: a keeper URL is required")
	}
	if cfg.FailoverSpread <= 0 {
		cfg.FailoverSpread = DefaultFailoverSpread
	}
	if cfg.MoveAvoid <= 0 {
		cfg.MoveAvoid = DefaultMoveAvoid
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.PendingInterval <= 0 {
		cfg.PendingInterval = DefaultPendingInterval
	}
	if cfg.FactsInterval <= 0 {
		cfg.FactsInterval = DefaultFactsInterval
	}
	if cfg.VitalsInterval <= 0 {
		cfg.VitalsInterval = DefaultVitalsInterval
	}
	if cfg.PingAfter <= 0 {
		cfg.PingAfter = DefaultPingAfter
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{cfg: cfg, log: log.With("sid", cfg.SID), version: cfg.Version, running: make(map[string]runningTask),
		resolve: cfg.Resolve, wake: make(chan struct{}, 1),
		tracer: tracing.Provider(cfg.TracerProvider).Tracer(tracing.ScopeSoul)}
	if a.resolve == nil {
		a.resolve = defaultResolver
	}
	var err error
	if a.version == "" {
		a.version = version.Version()
	}
	if cfg.Root != "" {
		if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
			return nil, fmt.Errorf("soul: creating root: %w", err)
		}
	}
	if a.key, err = LoadOrCreateKey(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("soul: %w", err)
	}
	if a.trust, err = resolveTrust(cfg); err != nil {
		return nil, fmt.Errorf("soul: %w", err)
	}
	if cfg.JoinToken != "" {
		if a.secret, _, err = jointoken.Decode(cfg.JoinToken); err != nil {
			return nil, fmt.Errorf("soul: join token: %w", err)
		}
	}
	if a.outbox, err = newOutbox(filepath.Join(cfg.DataDir, OutboxDir), a.log); err != nil {
		return nil, fmt.Errorf("soul: %w", err)
	}
	journal := ""
	if cfg.Root == "" && SystemdBooted() {
		// Confined (dev, swarm) souls are not the host's root: only a
		// real soul writes to the host's journal.
		journal = JournalSocket
	}
	if a.record, err = OpenTaskLog(filepath.Join(cfg.DataDir, TaskLogFile), TaskLogOptions{Journal: journal}); err != nil {
		return nil, fmt.Errorf("soul: %w", err)
	}
	a.runner = cfg.Runner
	if a.runner == nil {
		mr := &ModuleRunner{Root: cfg.Root, Facts: a.Facts, Logger: a.log}
		mr.Bundle = executor.BundleRunner(mr) // destiny bundles run with the same modules and confinement
		a.runner = mr
	}
	a.newHealth()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if cfg.LocalAddr.IsValid() {
		dialer.LocalAddr = &net.TCPAddr{IP: cfg.LocalAddr.AsSlice()}
	}
	a.dialer = dialer
	a.clients.dialer = dialer
	if a.targets, err = parseTargets(urls, a.trust.tls); err != nil {
		return nil, fmt.Errorf("soul: %w", err)
	}
	return a, nil
}

// SID is the soul's identity.
func (a *Agent) SID() string { return a.cfg.SID }

// PublicKey is the soul's Ed25519 public key.
func (a *Agent) PublicKey() ed25519.PublicKey { return a.key.Public().(ed25519.PublicKey) }

// Facts returns the last collected soulprint (shared; do not modify).
func (a *Agent) Facts() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.facts
}

// refreshFacts recollects the soulprint; changed reports whether it differs
// from the previous one.
func (a *Agent) refreshFacts() (changed bool, err error) {
	collect := a.cfg.Facts
	if collect == nil {
		collect = func() (map[string]any, error) { return CollectFacts(FactsOptions{SID: a.cfg.SID, Root: a.cfg.Root}) }
	}
	f, err := collect()
	if err != nil {
		return false, fmt.Errorf("collecting facts: %w", err)
	}
	if f == nil {
		f = map[string]any{}
	}
	f["sid"] = a.cfg.SID
	b, err := json.Marshal(f)
	if err != nil {
		return false, fmt.Errorf("encoding facts: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.facts != nil && bytes.Equal(a.factsJSON, b) {
		return false, nil
	}
	a.facts, a.factsJSON = f, b
	return true, nil
}

func (a *Agent) soulprintJSON() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.factsJSON
}

// Run keeps the soul connected until ctx ends: pick a keeper, dial,
// handshake, serve the session, and on any failure reconnect — to another
// of its keepers when it has several (see picker), with exponential
// backoff and jitter when they all fail. Work keeps running across
// reconnects. Run returns nil when ctx ends (after the running work
// stopped) and an error wrapping ErrRefused when a keeper refused the
// soul.
func (a *Agent) Run(ctx context.Context) error {
	defer a.clients.closeIdle()
	defer a.record.Close() // after the running work is recorded
	defer a.tasks.Wait()
	defer a.serving.Wait() // streams left behind by a move
	if _, err := a.refreshFacts(); err != nil {
		return fmt.Errorf("soul %s: %w", a.cfg.SID, err)
	}
	// Health checks run whether or not the keeper is reachable.
	hctx, stopHealth := context.WithCancel(ctx)
	var healthDone sync.WaitGroup
	healthDone.Add(1)
	go func() {
		defer healthDone.Done()
		a.health.Run(hctx)
	}()
	defer healthDone.Wait()
	defer stopHealth()
	attempt := 0
	var delay time.Duration
	for {
		ep, wait := a.picker.pick(a.endpoints(ctx), time.Now())
		if !a.sleep(ctx, max(delay, wait)) {
			return nil
		}
		welcomed, err := a.session(ctx, ep)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrRefused) {
			a.log.Error("keeper refused this soul", "keeper", ep, "err", err)
			return err
		}
		if welcomed {
			attempt = 0
		}
		now := time.Now()
		var busy *busyError
		switch {
		case errors.Is(err, errMoved):
			// Connected elsewhere soon; the old stream stays until its
			// work is done. Only this keeper is kept away from: an older
			// avoidance (another keeper that asked this soul to move, a
			// rebalance since answered) must not leave it nowhere to go
			// when this one is drained. A dead keeper among the others
			// costs one refused dial before its backoff applies again.
			a.picker.reset()
			a.picker.shun(ep.addr, a.cfg.MoveAvoid, now)
			delay = rand.N(a.spread() + 1)
			a.log.Info("keeper asked this soul to move; connecting to another keeper", "keeper", ep, "in", delay)
		case errors.As(err, &busy):
			// Honoured for this keeper; another one may have room now.
			a.picker.shun(ep.addr, busy.retryAfter, now)
			delay = rand.N(a.cfg.MinBackoff/2 + 1)
			a.log.Info("keeper is busy; trying another keeper, or this one after its retry-after", "keeper", ep, "retry_after", busy.retryAfter, "reason", busy.msg)
		case errors.Is(err, ErrVersion):
			delay = a.cfg.MaxBackoff
			a.log.Error("keeper refused this soul's version; will retry", "keeper", ep, "err", err, "retry_in", delay)
		case errors.Is(err, errPending):
			// The Archon accepting it compares this with souls show. A
			// pending hello is an answer, not a failure: the next one
			// comes after PendingInterval, however many came before.
			attempt = 0
			delay = a.cfg.PendingInterval
			a.log.Info("soul is pending acceptance; will say hello again", "reason", err, "key", domain.KeyFingerprint(a.PublicKey()), "retry_in", delay)
		default:
			// This keeper is kept away from for the backoff; another one
			// is tried at once (after a spread, when a working stream
			// broke: its keeper's souls do not all come back together).
			d := a.backoff(attempt)
			attempt++
			a.picker.shun(ep.addr, d, now)
			delay = rand.N(a.cfg.MinBackoff/2 + 1)
			if welcomed {
				delay = rand.N(a.spread() + 1)
			}
			a.log.Warn("keeper stream ended; reconnecting", "keeper", ep, "err", err, "this_keeper_in", d)
		}
	}
}

// spread is the failover spread, never longer than MaxBackoff.
func (a *Agent) spread() time.Duration { return min(a.cfg.FailoverSpread, a.cfg.MaxBackoff) }

// sleep waits d, or less when a stream left behind by a move ended while
// no other session runs (the picker's avoidances are then dropped: the
// soul needs a keeper, any keeper). It is false when ctx ended.
func (a *Agent) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-a.wake:
		a.picker.avoid = nil
	}
	return true
}

// backoff is the delay before reconnect attempt n (0-based): doubling from
// MinBackoff up to MaxBackoff, drawn uniformly from its upper half so a
// fleet that lost its keeper does not come back in lockstep.
func (a *Agent) backoff(n int) time.Duration {
	d := a.cfg.MinBackoff
	for i := 0; i < n && d < a.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, a.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}
