// Package gateway is the keeper side of the soul stream (SPEC §3, §10.3):
// it accepts the souls' Connect streams over TLS, onboards them (join token,
// pending, rejected, key binding), tracks connected/disconnected and last
// seen in the store, and implements dispatch.Dispatcher by sending work down
// those streams and collecting the results — souls dial out, the keeper
// calls back over the same connection.
//
// Per connected soul the gateway keeps one session: the HTTP handler
// goroutine reads the stream, a writer goroutine exists only while messages
// are queued for it, and a map holds the tasks waiting for an answer. Dispatch needs no goroutine per task: a
// waiter is a map entry and a timer, answered by whichever comes first —
// the soul's result, the timeout, the connection drop or the caller's
// cancellation.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/tlsutil"
	"github.com/soulstack/soulstack/proto/soulstack/v1/soulstackv1connect"
)

// Defaults of Config's optional fields.
const (
	DefaultFanOut            = 1000
	DefaultTaskTimeout       = 10 * time.Minute
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultHandshakeTimeout  = 10 * time.Second
	DefaultMaxPending        = 1000
	DefaultSendTimeout       = time.Minute
	DefaultSendRate          = 256 << 10
	// MaxMessageBytes bounds one message the keeper sends (a destiny
	// bundle).
	MaxMessageBytes = 64 << 20
	// DefaultMaxSoulMessageBytes bounds one message a soul sends (a result:
	// stdout and stderr are capped at 1 MiB each on the soul; a soulprint;
	// a log line) unless Config.MaxSoulMessageBytes says otherwise (audit
	// note I8).
	DefaultMaxSoulMessageBytes = 16 << 20
	// MaxHandshakeBytes bounds what a connection may send before it is an
	// accepted soul (hello with its soulprint, proof): anyone who reaches
	// the port can open one, so it must not cost the keeper much memory.
	MaxHandshakeBytes = 1 << 20
)

// missedHeartbeats is how many heartbeat intervals of silence end a session.
const missedHeartbeats = 3

// Config configures a Gateway.
type Config struct {
	// Store holds souls, join tokens and the audit log.
	Store store.Store
	// KeeperID names this keeper in the store (souls' keeper_id).
	KeeperID string
	// Fingerprint is the keeper CA fingerprint (tlsutil.Fingerprint) the
	// souls pin and sign into their handshake proof.
	Fingerprint string
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// FanOut bounds how many requests of one Dispatch call are in flight at
	// once; 0 means DefaultFanOut.
	FanOut int
	// DefaultTimeout applies to work without its own Timeout; 0 means
	// DefaultTaskTimeout.
	DefaultTimeout time.Duration
	// HeartbeatInterval is told to the souls; a soul silent for three
	// intervals is disconnected. 0 means DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// HandshakeTimeout bounds hello and proof; 0 means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxPending bounds how many souls may wait as pending: anyone who
	// reaches the port can register one per SID. A new soul without a
	// valid join token beyond it is told to retry later and is not
	// recorded. 0 means DefaultMaxPending; negative means no bound.
	MaxPending int
	// OnLateResult, when set, receives results nobody waits for any more
	// (the task timed out, was cancelled, or its soul reconnected after the
	// run gave up on it), so they can be recorded (SPEC §8.5). It runs on
	// the session's reader and must not block.
	OnLateResult func(sid, runID, taskID string, r domain.Result)
	// OnLog, when set, receives the log lines souls stream for running
	// tasks. It must not block.
	OnLog func(sid, taskID, level, text string)
	// OnHealth, OnVitals and OnWelcome, when set, receive souls' health
	// reports, vital signs (JSON) and each welcomed soul's SID. They run
	// on the session's reader and must not block.
	OnHealth  func(sid string, report []byte)
	OnVitals  func(sid string, vitals []byte)
	OnWelcome func(sid string)
	// OnGone, when set, is told of a soul whose stream to this keeper
	// ended (it is marked disconnected); it must not block.
	OnGone func(sid string)
	// MaxSoulMessageBytes bounds one message read from an accepted soul;
	// 0 means DefaultMaxSoulMessageBytes.
	MaxSoulMessageBytes int
	// HelloBurst and HelloRefill bound the hellos one source address may
	// fail: HelloBurst in a row, then one per HelloRefill; beyond, hellos
	// from it are refused unread. HelloAuditWindow is the period whose
	// failures of one source become one audit entry with a count. 0 means
	// DefaultHelloBurst, DefaultHelloRefill, DefaultHelloAuditWindow.
	HelloBurst       int
	HelloRefill      time.Duration
	HelloAuditWindow time.Duration
	// SendTimeout and SendRate bound one message sent to a soul: its
	// write must complete within SendTimeout plus its size at SendRate
	// bytes a second, else the soul is taken to have stopped reading and
	// its session ends (see sendBound). 0 means DefaultSendTimeout,
	// DefaultSendRate.
	SendTimeout time.Duration
	SendRate    int
	// Version is this keeper's version, against which a soul's hello
	// version is checked (version.Compatible); "" means the build's.
	Version string
	// MaxSouls is the keeper's soul budget: beyond it, a new soul is
	// refused as busy and told to retry after BusyRetry (0 means
	// DefaultBusyRetry), and goes to another keeper of its list. 0 means
	// no budget.
	MaxSouls  int
	BusyRetry time.Duration
	// MoveRate is how many souls a second Move asks to leave; 0 means
	// DefaultMoveRate.
	MoveRate int
}

// Gateway is the keeper side of the soul stream and a dispatch.Dispatcher.
type Gateway struct {
	cfg   Config
	log   *slog.Logger
	fp    string
	ready chan struct{} // closed once Run has reset this keeper's souls

	mu       sync.RWMutex
	sessions map[string]*session
	stopping bool
	leaving  map[string]time.Time     // last seen of the sessions ended by shutdown
	handlers sync.WaitGroup           // stream handlers, waited for by Run
	lean     map[*leanStream]struct{} // open lean connections, aborted by Run's end

	// sidLocks order a SID's session swap with its store status write, so a
	// dying old session never marks a fresh one disconnected.
	sidLocks [256]sync.Mutex
	seed     maphash.Seed
	rcWarn   sync.Once
	hellos   *helloGuard
	draining atomic.Bool
}

var _ dispatch.Dispatcher = (*Gateway)(nil)

// New returns a Gateway. Run must be running for souls to be accepted.
func New(cfg Config) *Gateway {
	if cfg.FanOut <= 0 {
		cfg.FanOut = DefaultFanOut
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTaskTimeout
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.BusyRetry <= 0 {
		cfg.BusyRetry = DefaultBusyRetry
	}
	if cfg.MoveRate <= 0 {
		cfg.MoveRate = DefaultMoveRate
	}
	if cfg.MaxSoulMessageBytes <= 0 {
		cfg.MaxSoulMessageBytes = DefaultMaxSoulMessageBytes
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	if cfg.SendRate <= 0 {
		cfg.SendRate = DefaultSendRate
	}
	if cfg.HelloBurst <= 0 {
		cfg.HelloBurst = DefaultHelloBurst
	}
	if cfg.HelloRefill <= 0 {
		cfg.HelloRefill = DefaultHelloRefill
	}
	if cfg.HelloAuditWindow <= 0 {
		cfg.HelloAuditWindow = DefaultHelloAuditWindow
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fp, err := tlsutil.NormalizeFingerprint(cfg.Fingerprint)
	if err != nil {
		// An unusable fingerprint makes every proof fail; say so loudly
		// rather than refusing to build (the keeper owns the config check).
		log.Error("gateway: keeper fingerprint is invalid; every soul will fail its proof", "err", err)
		fp = cfg.Fingerprint
	}
	return &Gateway{
		cfg:      cfg,
		log:      log.With("component", "gateway"),
		fp:       fp,
		ready:    make(chan struct{}),
		sessions: make(map[string]*session),
		seed:     maphash.MakeSeed(),
		hellos:   newHelloGuard(cfg.HelloBurst, cfg.HelloRefill, cfg.HelloAuditWindow),
	}
}

// Handler returns the soul stream's route pattern and handler, to mount on
// the keeper's HTTPS mux. Requests that did not arrive over TLS are refused.
// The server must speak HTTP/2 (TLS with "h2" in NextProtos) and must not
// wrap the ResponseWriter in a middleware that hides
// http.ResponseController's deadlines.
func (g *Gateway) Handler() (string, http.Handler) {
	pattern, h := soulstackv1connect.NewSoulServiceHandler(&service{g: g},
		connect.WithReadMaxBytes(g.cfg.MaxSoulMessageBytes),
		connect.WithSendMaxBytes(MaxMessageBytes),
		connect.WithCompressMinBytes(4096),
	)
	return pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "the soul stream is served over TLS only", http.StatusUpgradeRequired)
			return
		}
		if compressedRequest(r.Header) {
			// A compressed message could inflate to the read limit from a
			// few kilobytes of an unauthenticated hello; souls never
			// compress what they send.
			http.Error(w, "the soul stream takes uncompressed messages", http.StatusUnsupportedMediaType)
			return
		}
		body := &handshakeBody{ReadCloser: r.Body}
		body.left.Store(MaxHandshakeBytes)
		r.Body = body
		ctx := context.WithValue(r.Context(), rcKey{}, http.NewResponseController(w))
		ctx = context.WithValue(ctx, bodyKey{}, body)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Ready is closed once Run has reset this keeper's souls and accepts
// streams; before that a soul is told "keeper is starting" and retries.
func (g *Gateway) Ready() <-chan struct{} { return g.ready }

// Run resets this keeper's souls to disconnected (they held streams to a
// previous process), then accepts souls and keeps house — ending silent
// sessions and recording last seen — until ctx ends. It then closes every
// stream, waits for their handlers and returns. Cancel Run before (or
// while) shutting the HTTP server down: long-lived streams keep a graceful
// shutdown waiting otherwise.
//
// While the store is unavailable the reset is retried (souls are refused
// meanwhile, "keeper is starting"): a database that is briefly down does
// not stop the keeper (SPEC §10.4: every call answers 503 until it is
// back).
func (g *Gateway) Run(ctx context.Context) error {
	for warned := false; ; {
		err := g.cfg.Store.MarkKeeperSoulsDisconnected(ctx, g.cfg.KeeperID)
		if err == nil {
			break
		}
		if domain.ErrorCode(err) != domain.CodeUnavailable || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("gateway: marking souls of keeper %s disconnected: %w", g.cfg.KeeperID, err)
		}
		if !warned {
			g.log.Warn("gateway: the store is unavailable; souls are refused until it is back", "err", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	close(g.ready)
	t := time.NewTicker(g.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			g.shutdown()
			g.auditHellos(context.WithoutCancel(ctx), time.Now(), true)
			return nil
		case now := <-t.C:
			g.housekeep(ctx, now)
			g.auditHellos(ctx, now, false)
		}
	}
}

// shutdown refuses new streams, aborts the open ones, waits for their
// handlers and records every soul it held disconnected in one store
// transaction (a session ending while stopping leaves its last seen in
// g.leaving instead of writing on its own: 19,000 single-row writes made a
// keeper take minutes to stop).
func (g *Gateway) shutdown() {
	g.mu.Lock()
	g.stopping = true
	g.leaving = map[string]time.Time{}
	all := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		all = append(all, s)
	}
	g.abortLeanLocked()
	g.mu.Unlock()
	for _, s := range all {
		s.abort("keeper shutting down")
	}
	g.handlers.Wait()
	g.mu.Lock()
	leaving := g.leaving
	g.mu.Unlock()
	if len(leaving) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Only those still connected here: a rejection stands.
	if err := g.cfg.Store.MarkSoulsDisconnected(ctx, g.cfg.KeeperID, leaving); err != nil {
		g.log.Warn("recording souls disconnected at shutdown", "souls", len(leaving), "err", err)
	}
}

// housekeep ends sessions silent for too long and records last seen for
// the others, at most once per two heartbeat intervals per soul and all of
// them in one store transaction, so a large fleet does not turn
// heartbeats into a stream of store writes (50,000 souls were 1,700
// single-row transactions a second, starving onboarding of the writer).
func (g *Gateway) housekeep(ctx context.Context, now time.Time) {
	hb := g.cfg.HeartbeatInterval
	seen := map[string]time.Time{}
	var touched []*session
	for _, s := range g.snapshot() {
		last := s.lastSeen.Load()
		switch {
		case now.UnixNano()-last > int64(missedHeartbeats*hb):
			g.log.Warn("soul missed its heartbeats; closing its stream", "sid", s.sid, "last_seen", time.Unix(0, last))
			s.abort("heartbeat timeout")
		case last-s.touched >= int64(2*hb):
			seen[s.sid] = time.Unix(0, last)
			touched = append(touched, s)
		}
	}
	if len(seen) == 0 {
		return
	}
	if err := g.cfg.Store.TouchSouls(ctx, seen); err != nil {
		if ctx.Err() == nil {
			g.log.Warn("recording souls last seen", "souls", len(seen), "err", err)
		}
		return
	}
	for _, s := range touched {
		s.touched = seen[s.sid].UnixNano()
	}
}

func (g *Gateway) snapshot() []*session {
	g.mu.RLock()
	defer g.mu.RUnlock()
	all := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		all = append(all, s)
	}
	return all
}

// Connected reports whether sid holds a stream to this keeper.
func (g *Gateway) Connected(sid string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.sessions[sid]
	return ok
}

// ConnectedSIDs lists the souls holding a stream to this keeper, sorted.
func (g *Gateway) ConnectedSIDs() []string {
	g.mu.RLock()
	out := make([]string, 0, len(g.sessions))
	for sid := range g.sessions {
		out = append(out, sid)
	}
	g.mu.RUnlock()
	slices.Sort(out)
	return out
}

// Disconnect closes sid's stream, if it has one here (for example after an
// Archon rejected it: its next hello is refused). It reports whether there
// was one.
func (g *Gateway) Disconnect(sid, reason string) bool {
	g.mu.RLock()
	s := g.sessions[sid]
	g.mu.RUnlock()
	if s == nil {
		return false
	}
	s.abort(reason)
	return true
}

func (g *Gateway) sidLock(sid string) *sync.Mutex {
	return &g.sidLocks[maphash.String(g.seed, sid)%uint64(len(g.sidLocks))]
}

// attach makes s the session of its SID, aborting the one it replaces, and
// records the soul connected. It fails when the gateway is stopping.
func (g *Gateway) attach(ctx context.Context, s *session) error {
	l := g.sidLock(s.sid)
	l.Lock()
	defer l.Unlock()
	g.mu.Lock()
	if g.stopping {
		g.mu.Unlock()
		return errStopping
	}
	old := g.sessions[s.sid]
	g.sessions[s.sid] = s
	g.mu.Unlock()
	if old != nil {
		old.abort("replaced by a new connection of the same soul")
	}
	// Only if it is still accepted: an Archon may have rejected it since
	// its hello was decided.
	if err := g.cfg.Store.MarkSoulConnected(ctx, s.sid, g.cfg.KeeperID, time.Now()); err != nil {
		// Not attached after all: no dispatch may reach it, and Connected
		// must not report it while its stream is being closed.
		g.mu.Lock()
		if g.sessions[s.sid] == s {
			delete(g.sessions, s.sid)
		}
		g.mu.Unlock()
		if domain.ErrorCode(err) == domain.CodeConflict {
			return errNotAccepted
		}
		return fmt.Errorf("recording soul %s connected: %w", s.sid, err)
	}
	return nil
}

// errNotAccepted is attach's answer when the soul was rejected (or is
// otherwise no longer accepted) since its hello was decided.
var errNotAccepted = errors.New("no longer accepted")

// detach removes s if it is still its SID's session and then records the
// soul disconnected.
func (g *Gateway) detach(s *session) {
	l := g.sidLock(s.sid)
	l.Lock()
	defer l.Unlock()
	g.mu.Lock()
	current := g.sessions[s.sid] == s
	if current {
		delete(g.sessions, s.sid)
	}
	batched := current && g.leaving != nil // stopping: shutdown writes them all at once
	if batched {
		g.leaving[s.sid] = time.Unix(0, s.lastSeen.Load())
	}
	g.mu.Unlock()
	if !current || batched {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Only if it is still connected here: a rejection stands.
	if err := g.cfg.Store.MarkSoulDisconnected(ctx, s.sid, g.cfg.KeeperID, time.Unix(0, s.lastSeen.Load())); err != nil {
		g.log.Warn("recording soul disconnected", "sid", s.sid, "err", err)
	}
	if g.cfg.OnGone != nil {
		g.cfg.OnGone(s.sid)
	}
}

var errStopping = errors.New("keeper is shutting down")

func (g *Gateway) lookup(sid string) *session {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.sessions[sid]
}
