package soul

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/soulwire"
	"github.com/soulstack/soulstack/proto/soulstack/v1/soulstackv1connect"
)

// A soul holds a list of keeper addresses (SPEC §17, keeper fleet): the
// URLs it was given, and every address each URL's host name resolves to.
// All of them are one fleet pinned to one CA. The soul connects to one of
// them chosen at random (a fleet's first connections spread over the
// keepers), and when a keeper fails, refuses it as busy, or asks it to
// move, that address is avoided for a while and another is chosen at
// random among the rest, so the souls of a dead keeper spread over the
// survivors instead of all landing on the next one.

// Defaults of the fleet options of Config.
const (
	// DefaultFailoverSpread bounds the random delay before a soul whose
	// keeper went away says hello to another: a keeper's souls arrive at
	// the survivors spread over it, not in one burst.
	DefaultFailoverSpread = 3 * time.Second
	// DefaultMoveAvoid is how long a soul asked to move (keeper drain,
	// rebalance) keeps away from that keeper's address when it has others.
	DefaultMoveAvoid = 10 * time.Minute
	// resolveTimeout bounds one DNS lookup of a keeper's host name.
	resolveTimeout = 5 * time.Second
)

// SplitKeeperURLs splits keeper addresses given as a list (repeated
// --keeper flags, each of which may itself be a comma or space separated
// list, as SOULSTACK_KEEPER in soul.env is) into single URLs, without
// trailing slashes or duplicates, in order.
func SplitKeeperURLs(values ...string) []string {
	var out []string
	for _, v := range values {
		for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
			f = strings.TrimRight(f, "/")
			if f != "" && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// target is one keeper URL the soul was given.
type target struct {
	url  string // https://host:port
	host string // the name its certificate is checked against (with a CA file)
	port string
	tls  *tls.Config // the lean stream's: the shared trust, this host's SNI
}

// endpoint is one address to dial: a target's host resolved to one IP.
type endpoint struct {
	t    *target
	addr string // ip:port, or host:port when the name did not resolve
}

func (e endpoint) String() string {
	if e.t == nil {
		return e.addr
	}
	if h, _, _ := net.SplitHostPort(e.addr); h == e.t.host {
		return e.t.url
	}
	return e.t.url + " (" + e.addr + ")"
}

// parseTargets validates the keeper URLs: https, with a host.
func parseTargets(urls []string, base *tls.Config) ([]*target, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("a keeper URL is required")
	}
	out := make([]*target, 0, len(urls))
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("invalid keeper URL %q", raw)
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("keeper URL %q must be https: the soul stream runs over TLS only", raw)
		}
		port := u.Port()
		if port == "" {
			port = "443"
		}
		c := base.Clone()
		c.NextProtos = []string{soulwire.Proto, "h2"}
		if c.ServerName == "" {
			c.ServerName = u.Hostname()
		}
		out = append(out, &target{url: strings.TrimRight(raw, "/"), host: u.Hostname(), port: port, tls: c})
	}
	return out, nil
}

// Resolver looks a keeper's host name up: every address it has.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

func defaultResolver(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// endpoints resolves every target: a literal IP is itself, a name is
// every address it resolves to now (a name that does not resolve stays a
// name, for the dial to report). The list is sorted and without
// duplicates.
func (a *Agent) endpoints(ctx context.Context) []endpoint {
	var out []endpoint
	seen := map[string]bool{}
	add := func(e endpoint) {
		if !seen[e.addr] {
			seen[e.addr] = true
			out = append(out, e)
		}
	}
	for _, t := range a.targets {
		if ip, err := netip.ParseAddr(t.host); err == nil {
			add(endpoint{t: t, addr: net.JoinHostPort(ip.String(), t.port)})
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		ips, err := a.resolve(rctx, t.host)
		cancel()
		if err != nil || len(ips) == 0 {
			if ctx.Err() == nil {
				a.log.Debug("resolving keeper host", "host", t.host, "err", err)
			}
			add(endpoint{t: t, addr: net.JoinHostPort(t.host, t.port)})
			continue
		}
		for _, ip := range ips {
			add(endpoint{t: t, addr: net.JoinHostPort(ip.Unmap().String(), t.port)})
		}
	}
	slices.SortFunc(out, func(x, y endpoint) int { return strings.Compare(x.addr, y.addr) })
	return out
}

// picker chooses the next endpoint: at random among those not avoided,
// else the one whose avoidance ends first, after waiting for it. Only the
// Run loop uses it.
type picker struct {
	avoid map[string]time.Time // by address: not before this time
}

func (p *picker) pick(eps []endpoint, now time.Time) (endpoint, time.Duration) {
	var free []endpoint
	var soonest endpoint
	var until time.Time
	for _, e := range eps {
		t, ok := p.avoid[e.addr]
		if !ok || !t.After(now) {
			free = append(free, e)
			continue
		}
		if until.IsZero() || t.Before(until) {
			soonest, until = e, t
		}
	}
	if len(free) > 0 {
		return free[rand.N(len(free))], 0
	}
	return soonest, until.Sub(now)
}

// reset forgets every avoidance.
func (p *picker) reset() { clear(p.avoid) }

// shun avoids addr for d from now (longer if it is avoided longer).
func (p *picker) shun(addr string, d time.Duration, now time.Time) {
	if p.avoid == nil {
		p.avoid = map[string]time.Time{}
	}
	for a, t := range p.avoid {
		if !t.After(now) {
			delete(p.avoid, a)
		}
	}
	if t := now.Add(d); t.After(p.avoid[addr]) {
		p.avoid[addr] = t
	}
}

// connectClients makes the Connect route's clients (for keepers that do
// not offer the lean stream), one per endpoint address, each dialling that
// address whatever its URL's host resolves to.
type connectClients struct {
	dialer *net.Dialer
	mu     sync.Mutex
	byAddr map[string]*connectClient
}

type connectClient struct {
	tr *http.Transport
	c  soulstackv1connect.SoulServiceClient
}

func (cc *connectClients) get(e endpoint, trust *tls.Config) soulstackv1connect.SoulServiceClient {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c, ok := cc.byAddr[e.addr]; ok {
		return c.c
	}
	protos := new(http.Protocols)
	protos.SetHTTP2(true)
	tc := trust.Clone()
	if tc.ServerName == "" {
		tc.ServerName = e.t.host
	}
	addr := e.addr
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return cc.dialer.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     tc,
		ForceAttemptHTTP2:   true,
		Protocols:           protos,
		TLSHandshakeTimeout: 10 * time.Second,
		// Ping a silent keeper so a dead connection is noticed.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
	c := soulstackv1connect.NewSoulServiceClient(&http.Client{Transport: tr}, e.t.url,
		connect.WithGRPC(),
		connect.WithReadMaxBytes(maxMessageBytes),
		connect.WithSendMaxBytes(maxMessageBytes),
		connect.WithCompressMinBytes(4096),
	)
	if cc.byAddr == nil {
		cc.byAddr = map[string]*connectClient{}
	}
	cc.byAddr[e.addr] = &connectClient{tr: tr, c: c}
	return c
}

func (cc *connectClients) closeIdle() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, c := range cc.byAddr {
		c.tr.CloseIdleConnections()
	}
}
