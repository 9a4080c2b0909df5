package lab

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	mathbits "math/bits"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// ruleArgs is the policy-routing rule that makes every packet routed from
// the bridge unreachable: hosts reach the machine's addresses (the local
// table is consulted first) and each other (bridged, not routed), nothing
// else, even where IP forwarding is on.
func ruleArgs(bridge string) []string {
	return []string{"iif", bridge, "unreachable", "pref", "1000"}
}

// allocSubnet picks a 10.231.X.0/24 that no interface address, route or
// other lab uses, starting from one derived from the lab name so a lab
// tends to get the same subnet every time. The caller holds the network
// lock.
func allocSubnet(name string) (netip.Prefix, error) {
	used, err := usedPrefixes()
	if err != nil {
		return netip.Prefix{}, err
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	start := int(h.Sum32() % 256)
	for i := range 256 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 231, byte((start + i) % 256), 0}), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(p) {
				free = false
				break
			}
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, errors.New("no free /24 left in 10.231.0.0/16")
}

// usedPrefixes lists the IPv4 prefixes in use on the machine: interface
// addresses, routes of the main table (but the default route) and the
// subnets recorded by other labs.
func usedPrefixes() ([]netip.Prefix, error) {
	var used []netip.Prefix
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			used = append(used, p.Masked())
		}
	}
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(routes)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] == "Iface" {
			continue
		}
		dst, err1 := hex.DecodeString(f[1])
		mask, err2 := hex.DecodeString(f[7])
		if err1 != nil || err2 != nil || len(dst) != 4 || len(mask) != 4 {
			continue
		}
		// /proc/net/route prints addresses in host (little-endian) order.
		bits := mathbits.OnesCount32(binary.LittleEndian.Uint32(mask))
		if bits == 0 {
			continue
		}
		addr := netip.AddrFrom4([4]byte{dst[3], dst[2], dst[1], dst[0]})
		used = append(used, netip.PrefixFrom(addr, bits).Masked())
	}
	states, _ := filepath.Glob(filepath.Join(runDir, "*.json"))
	for _, s := range states {
		st, err := readState(namesFor(strings.TrimSuffix(filepath.Base(s), ".json")))
		if err != nil {
			continue
		}
		if p, err := netip.ParsePrefix(st.Subnet); err == nil {
			used = append(used, p)
		}
	}
	return used, nil
}

// hostAddr is the address of host i (1-based) in subnet: .10+i.
func hostAddr(subnet netip.Prefix, i int) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = byte(10 + i)
	return netip.AddrFrom4(a)
}

// gatewayAddr is the bridge's address, .1.
func gatewayAddr(subnet netip.Prefix) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = 1
	return netip.AddrFrom4(a)
}

// setupBridge creates the lab's bridge with the gateway address.
func setupBridge(ctx context.Context, bridge string, subnet netip.Prefix) error {
	gw := netip.PrefixFrom(gatewayAddr(subnet), subnet.Bits())
	steps := [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", gw.String(), "dev", bridge},
		{"link", "set", bridge, "up"},
		append([]string{"rule", "add"}, ruleArgs(bridge)...),
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("creating bridge %s: %w", bridge, err)
		}
	}
	return nil
}

// setupHostNet creates a host's network namespace and its veth pair: the
// machine end on the bridge, eth0 inside with the host's address and a
// default route via the gateway.
func setupHostNet(ctx context.Context, h *Host, bridge string, subnet netip.Prefix) error {
	addr := netip.PrefixFrom(netip.MustParseAddr(h.ip), subnet.Bits())
	steps := [][]string{
		{"netns", "add", h.netns},
		{"link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns},
		{"link", "set", h.veth, "master", bridge, "up"},
		{"-n", h.netns, "link", "set", "lo", "up"},
		{"-n", h.netns, "addr", "add", addr.String(), "dev", "eth0"},
		{"-n", h.netns, "link", "set", "eth0", "up"},
		{"-n", h.netns, "route", "add", "default", "via", gatewayAddr(subnet).String()},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("%s: network: %w", h.name, err)
		}
	}
	return nil
}

// teardownNet removes a lab's network namespaces, veths, bridge and rule;
// what does not exist is skipped. The namespaces' processes must be gone.
func teardownNet(ctx context.Context, n names) error {
	var errs []error
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if n.isNetns(e.Name()) {
			if err := ip(ctx, "netns", "del", e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing interfaces: %w", err))...)
	}
	for _, ifc := range ifaces {
		if n.isVeth(ifc.Name) || ifc.Name == n.bridge() {
			// A veth goes with its namespace; it may be gone by now.
			if err := ip(ctx, "link", "del", ifc.Name); err != nil && linkExists(ifc.Name) {
				errs = append(errs, err)
			}
		}
	}
	for range 10 {
		if ip(ctx, append([]string{"rule", "del"}, ruleArgs(n.bridge())...)...) != nil {
			break
		}
	}
	return errors.Join(errs...)
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}
