package gateway

import (
	"context"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Defaults of the hello abuse bounds (SPEC §10.2 "Abuse bounds", audit
// finding L1): anyone who reaches the port can say hello, so failed hellos
// are rate-limited per source address and their audit entries aggregated.
const (
	// DefaultHelloBurst is how many hellos a source may fail in a row
	// before it must wait.
	DefaultHelloBurst = 10
	// DefaultHelloRefill is the time one more failed hello is allowed
	// after.
	DefaultHelloRefill = 5 * time.Second
	// DefaultHelloAuditWindow is the period over which a source's failed
	// hellos are collapsed into one audit entry with a count.
	DefaultHelloAuditWindow = time.Minute
	// maxHelloSources bounds the sources tracked at once.
	maxHelloSources = 1 << 16
)

// ActionHelloFailures is the audit action of the aggregated entry: the
// failed hellos of one source in one window beyond the first (which is
// audited at once, as soul.key_mismatch, when it is one).
const ActionHelloFailures = "soul.hello_failures"

// helloGuard is the per-source budget of hellos that fail, and the
// aggregation of their audit entries.
type helloGuard struct {
	burst  float64
	refill time.Duration
	window time.Duration

	mu      sync.Mutex
	sources map[string]*helloSource
}

type helloSource struct {
	tokens float64
	last   time.Time
	agg    *helloAggregate
}

// helloAggregate counts one source's failures in one window.
type helloAggregate struct {
	start    time.Time
	last     time.Time
	failures int            // failed hellos (all of them, the first included)
	refused  int            // hellos refused by the rate limit
	actions  map[string]int // why they failed
	sids     map[string]int // which SIDs they claimed (at most 20 kept)
}

func newHelloGuard(burst int, refill, window time.Duration) *helloGuard {
	return &helloGuard{burst: float64(burst), refill: refill, window: window, sources: map[string]*helloSource{}}
}

// sourceKey is the rate-limit key of a peer address: its IP, or its /64
// for IPv6 (one host often holds a whole /64).
func sourceKey(peer string) string {
	host, _, err := net.SplitHostPort(peer)
	if err != nil {
		host = peer
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// source returns src's record, its tokens refilled up to now.
func (g *helloGuard) source(src string, now time.Time) *helloSource {
	s := g.sources[src]
	if s == nil {
		if len(g.sources) >= maxHelloSources {
			g.prune(now)
		}
		s = &helloSource{tokens: g.burst, last: now}
		if len(g.sources) < maxHelloSources {
			g.sources[src] = s
		}
		return s
	}
	if g.refill > 0 {
		s.tokens = min(g.burst, s.tokens+float64(now.Sub(s.last))/float64(g.refill))
	}
	s.last = now
	return s
}

// limited reports whether src failed too many hellos lately. A limited
// source's hellos are still read and their key proof checked (that costs
// the keeper one signature check), but only a soul proving the key bound
// to an accepted SID is served: the limit buys the attacker no audit rows,
// no registrations and no store writes, and cannot lock an honest soul
// out of its own SID (N1: a NAT, an IPv6 /64 or a load balancer shares
// one source among many souls). Only failures spend the budget, so many
// souls behind one address that reconnect at once are not held back.
func (g *helloGuard) limited(src string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.source(src, now).tokens < 1
}

// refused counts a hello of a limited source that was not served.
func (g *helloGuard) refused(src, sid string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.aggregate(g.source(src, now), now)
	a.refused++
	if _, ok := a.sids[sid]; sid != "" && (ok || len(a.sids) < 20) {
		a.sids[sid]++
	}
}

// failed records a failed hello of src (action says why, sid what it
// claimed). first reports the source's first failure of the window: that
// one is audited in full at once; the others only counted.
func (g *helloGuard) failed(src, action, sid string, now time.Time) (first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.source(src, now)
	// Concurrent hellos may all fail: the debt is paid back by waiting.
	s.tokens = max(-g.burst, s.tokens-1)
	a := g.aggregate(s, now)
	a.failures++
	a.actions[action]++
	if _, ok := a.sids[sid]; ok || len(a.sids) < 20 {
		a.sids[sid]++
	}
	return a.failures == 1
}

func (g *helloGuard) aggregate(s *helloSource, now time.Time) *helloAggregate {
	if s.agg == nil {
		s.agg = &helloAggregate{start: now, actions: map[string]int{}, sids: map[string]int{}}
	}
	s.agg.last = now
	return s.agg
}

// flush returns the audit entries of the windows that ended by now (all
// of them when force), one per source with what it did beyond its first
// failure, and forgets sources with a full budget and nothing to report.
func (g *helloGuard) flush(now time.Time, force bool, keeperID string) []store.AuditEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []store.AuditEntry
	for _, src := range slices.Sorted(maps.Keys(g.sources)) {
		s := g.sources[src]
		a := s.agg
		if a == nil || (!force && now.Sub(a.start) < g.window) {
			continue
		}
		s.agg = nil
		if extra := a.failures - 1 + a.refused; a.failures > 1 || a.refused > 0 {
			out = append(out, store.AuditEntry{
				Time: now, Action: ActionHelloFailures, Target: src,
				Summary: map[string]any{
					"count":     a.failures + a.refused,
					"failed":    a.failures,
					"refused":   a.refused,
					"unaudited": extra,
					"actions":   a.actions,
					"sids":      a.sids,
					"from":      a.start.UTC().Format(time.RFC3339),
					"to":        a.last.UTC().Format(time.RFC3339),
					"keeper_id": keeperID,
				},
			})
		}
	}
	g.prune(now)
	return out
}

// prune forgets sources with nothing pending and a budget refilled.
func (g *helloGuard) prune(now time.Time) {
	for src, s := range g.sources {
		if s.agg != nil {
			continue
		}
		if g.refill <= 0 || s.tokens+float64(now.Sub(s.last))/float64(g.refill) >= g.burst {
			delete(g.sources, src)
		}
	}
}

// auditHellos writes the aggregated failed-hello entries of the windows
// that ended (all of them when force, at shutdown).
func (g *Gateway) auditHellos(ctx context.Context, now time.Time, force bool) {
	for _, e := range g.hellos.flush(now, force, g.cfg.KeeperID) {
		if err := g.cfg.Store.AppendAudit(ctx, e); err != nil {
			g.log.Error("auditing failed hellos", "source", e.Target, "err", err)
			continue
		}
		g.log.Warn("failed soul hellos from one source", "source", e.Target, "count", e.Summary["count"], "refused", e.Summary["refused"])
	}
}
