// Package netguard decides which network destinations the Keeper itself
// may reach on behalf of a scenario (on: keeper core.http.request, SPEC §9).
//
// A Policy is built from the Keeper config's `http.allow` list. Each entry
// is one of:
//
//   - `public`: any address outside the refused ranges below;
//   - a CIDR (`10.20.0.0/16`) or a single address (`192.0.2.7`);
//   - a host name (`inventory.internal`) or a domain wildcard
//     (`*.corp.example`, the domain's subdomains).
//
// Loopback, link-local (cloud metadata), private, carrier-grade NAT,
// unspecified, multicast and reserved ranges — and the Keeper host's own
// interface addresses — are refused unless an entry names them explicitly:
// a CIDR or address lying inside such a range, or a host name (whatever it
// resolves to, since the admin trusted that name). `public` and catch-alls
// such as `0.0.0.0/0` never open them.
//
// The check runs at connect time on the resolved address (a net.Dialer
// Control hook), so neither a redirect nor a DNS answer that changes
// between lookups (rebinding) can lead the request elsewhere, and the
// client never uses a proxy from the environment.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Public is the allow entry for every address outside the refused ranges.
const Public = "public"

// DefaultAllow returns the allow list used when the config sets none.
func DefaultAllow() []string { return []string{Public} }

// refused are the ranges a request is kept out of unless an entry inside
// them allows it.
var refused = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32",
	"fc00::/7", "fe80::/10", "ff00::/8",
)

func mustPrefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// Policy is a parsed allow list.
type Policy struct {
	public   bool
	prefixes []netip.Prefix
	hosts    map[string]bool // exact host names, lower case
	domains  []string        // ".corp.example" for *.corp.example
	// localAddrs returns the host's own interface addresses; nil uses
	// net.InterfaceAddrs.
	localAddrs func() ([]netip.Addr, error)
}

// New parses an allow list; nil or empty means DefaultAllow. Each bad
// entry is reported by its index and value.
func New(allow []string) (*Policy, error) {
	if len(allow) == 0 {
		allow = DefaultAllow()
	}
	p := &Policy{hosts: map[string]bool{}}
	var errs []error
	for i, e := range allow {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			errs = append(errs, fmt.Errorf("http.allow[%d]: empty entry", i))
		case strings.EqualFold(e, Public):
			p.public = true
		case strings.Contains(e, "/"):
			pr, err := netip.ParsePrefix(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("http.allow[%d] %q: not a CIDR", i, e))
				continue
			}
			p.prefixes = append(p.prefixes, pr.Masked())
		default:
			if a, err := netip.ParseAddr(e); err == nil {
				a = a.Unmap()
				p.prefixes = append(p.prefixes, netip.PrefixFrom(a, a.BitLen()))
				continue
			}
			name := strings.ToLower(strings.TrimSuffix(e, "."))
			wild := strings.HasPrefix(name, "*.")
			if !validHost(strings.TrimPrefix(name, "*.")) {
				errs = append(errs, fmt.Errorf("http.allow[%d] %q: want %q, a CIDR, an address, a host name or *.domain", i, e, Public))
				continue
			}
			if wild {
				p.domains = append(p.domains, name[1:])
			} else {
				p.hosts[name] = true
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// hostAllowed reports whether a host name is allowed by name.
func (p *Policy) hostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if p.hosts[host] {
		return true
	}
	for _, d := range p.domains {
		if strings.HasSuffix(host, d) && len(host) > len(d) {
			return true
		}
	}
	return false
}

// isRefused reports whether a lies in a range refused by default.
func isRefused(a netip.Addr) bool {
	for _, r := range refused {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

// namesRefused reports whether the allow entry pr lies inside a refused
// range, i.e. it opens that part explicitly.
func namesRefused(pr netip.Prefix) bool {
	for _, r := range refused {
		if r.Contains(pr.Addr()) && pr.Bits() >= r.Bits() {
			return true
		}
	}
	return false
}

// CheckAddr decides whether the resolved address a may be connected to.
// byName says the requested host name itself is allowed.
func (p *Policy) CheckAddr(a netip.Addr, byName bool) error {
	a = a.Unmap()
	if byName {
		return nil
	}
	special := isRefused(a)
	if !special {
		local, err := p.isLocal(a)
		if err != nil {
			return err
		}
		special = local
	}
	for _, pr := range p.prefixes {
		if pr.Contains(a) && (!special || namesRefused(pr) || pr.IsSingleIP()) {
			return nil
		}
	}
	if special {
		return refusedError(fmt.Sprintf("%s is a loopback, link-local, private or reserved address (or the Keeper's own): the Keeper does not send requests there unless http.allow in its config names it", a))
	}
	if p.public {
		return nil
	}
	return refusedError(fmt.Sprintf("%s is not in the Keeper config's http.allow", a))
}

// ErrRefused is what errors.Is finds in a connection the policy refused
// (through CheckAddr or DialContext).
var ErrRefused = errors.New("refused by the Keeper's destination policy (http.allow)")

// refusedError is CheckAddr's refusal: its own message, and ErrRefused.
type refusedError string

func (e refusedError) Error() string        { return string(e) }
func (e refusedError) Is(target error) bool { return target == ErrRefused }

func (p *Policy) isLocal(a netip.Addr) (bool, error) {
	addrs := p.localAddrs
	if addrs == nil {
		addrs = interfaceAddrs
	}
	list, err := addrs()
	if err != nil {
		return false, fmt.Errorf("listing the Keeper's own addresses: %w", err)
	}
	for _, l := range list {
		if l.Unmap() == a {
			return true, nil
		}
	}
	return false, nil
}

func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// DialContext connects like net.Dialer.DialContext but only to addresses
// the policy allows, checked on the address actually connected to.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	byName := false
	if _, err := netip.ParseAddr(host); err != nil {
		byName = p.hostAllowed(host)
	}
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, addr string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return fmt.Errorf("refusing connection to %s: %w", addr, err)
			}
			if err := p.CheckAddr(ap.Addr(), byName); err != nil {
				return fmt.Errorf("refusing connection to %s (%s): %w", host, ap.Addr(), err)
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, address)
}

// Client returns an HTTP client whose every connection — the first request
// and each redirect — goes through the policy. It ignores proxy settings
// from the environment (a proxy would hide the real destination).
func (p *Policy) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = p.DialContext
	tr.DialTLSContext = nil
	return &http.Client{Transport: tr}
}
