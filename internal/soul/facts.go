package soul

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FactsOptions tunes CollectFacts.
type FactsOptions struct {
	// SID overrides the soul's identity; empty means the FQDN.
	SID string
	// Root, when set (the soul's --root), is searched first for
	// etc/os-release, so a confined soul reports its root's distribution.
	// Kernel, CPU, memory and network facts are always the host's.
	Root string
}

// fqdnTimeout bounds the name lookup used to find the FQDN, so a broken
// resolver cannot stall the soul's start or a facts refresh.
const fqdnTimeout = 500 * time.Millisecond

// CollectFacts gathers the soulprint of this host from /proc, /etc and the
// kernel, without running external programs. The result is JSON friendly
// (strings, int64, []any, map[string]any) and nested, so CEL reads
// soulprint.self.os.family:
//
//	sid, hostname, kernel, init ("systemd" or "sysv"), boot_id (new at
//	every boot; core.system.rebooted waits for it to change), covens
//	(empty; the Keeper fills it),
//	memory_mb, cpus, virtualization ("none", "kvm", "docker", …; see
//	detectVirt), mounts ([{path, device, fstype, options: [..]}], pseudo
//	filesystems left out),
//	os.{family,name,distribution,version,codename,pretty_name,arch}
//	(distribution is os-release's ID, e.g. "debian", "ubuntu", "rocky"),
//	network.{primary_ip,interfaces: name -> [ip, …]},
//	cpu.{count,model}, memory.total_mb.
//
// A fact that cannot be read is left empty rather than failing the whole
// soulprint; only a host without a hostname is an error.
func CollectFacts(opts FactsOptions) (map[string]any, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reading hostname: %w", err)
	}
	sid := opts.SID
	if sid == "" {
		sid = fqdn(hostname)
	}
	osr := readOSRelease(opts.Root)
	ifaces := interfaceAddrs()
	cpuCount, cpuModel := cpuInfo()
	memMB := memTotalMB()
	return map[string]any{
		"sid":      sid,
		"hostname": hostname,
		"kernel":   kernelRelease(),
		"init":     initSystem(),
		"boot_id":  BootID(),
		"covens":   []any{},
		// memory_mb and cpus are the flat forms of memory.total_mb and
		// cpu.count (SPEC §9).
		"memory_mb":      memMB,
		"cpus":           cpuCount,
		"virtualization": virtualization(),
		"mounts":         mountFacts(),
		"os": map[string]any{
			"family":       osFamily(osr["ID"], osr["ID_LIKE"]),
			"name":         osr["ID"],
			"distribution": osr["ID"],
			"version":      osr["VERSION_ID"],
			"codename":     firstNonEmpty(osr["VERSION_CODENAME"], osr["UBUNTU_CODENAME"]),
			"pretty_name":  osr["PRETTY_NAME"],
			"arch":         machineArch(),
		},
		"network": map[string]any{
			"primary_ip": primaryIP(ifaces),
			"interfaces": ifaces.asFacts(),
		},
		"cpu":    map[string]any{"count": cpuCount, "model": cpuModel},
		"memory": map[string]any{"total_mb": memMB},
	}, nil
}

// fqdn finds the fully qualified name of hostname the way `hostname -f`
// does: a name with a dot already is one; else /etc/hosts; else the
// resolver's canonical name; else the short name.
func fqdn(hostname string) string {
	if strings.Contains(hostname, ".") {
		return hostname
	}
	if f, err := os.Open("/etc/hosts"); err == nil {
		name := fqdnFromHosts(f, hostname)
		f.Close()
		if name != "" {
			return name
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fqdnTimeout)
	defer cancel()
	if cname, err := net.DefaultResolver.LookupCNAME(ctx, hostname); err == nil {
		cname = strings.TrimSuffix(cname, ".")
		if strings.HasPrefix(cname, hostname+".") {
			return cname
		}
	}
	return hostname
}

// fqdnFromHosts returns the canonical name of the first hosts line naming
// hostname, when that name is qualified.
func fqdnFromHosts(r io.Reader, hostname string) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		for _, n := range f[1:] {
			if n == hostname || strings.HasPrefix(n, hostname+".") {
				if strings.HasPrefix(f[1], hostname+".") {
					return f[1]
				}
				break
			}
		}
	}
	return ""
}

// readOSRelease parses os-release(5) from the root, falling back to the
// host's files.
func readOSRelease(root string) map[string]string {
	var paths []string
	if root != "" {
		paths = append(paths, filepath.Join(root, "etc/os-release"), filepath.Join(root, "usr/lib/os-release"))
	}
	paths = append(paths, "/etc/os-release", "/usr/lib/os-release")
	for _, p := range paths {
		if f, err := os.Open(p); err == nil {
			m := parseOSRelease(f)
			f.Close()
			return m
		}
	}
	return map[string]string{}
}

func parseOSRelease(r io.Reader) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		} else {
			v = strings.Trim(v, `"'`)
		}
		m[k] = v
	}
	return m
}

// osFamily maps os-release ID and ID_LIKE to the families modules choose
// their tools by: debian, redhat, suse, arch, alpine, or the ID itself.
func osFamily(id, idLike string) string {
	known := map[string]string{
		"debian": "debian", "ubuntu": "debian", "raspbian": "debian", "linuxmint": "debian",
		"rhel": "redhat", "fedora": "redhat", "centos": "redhat", "rocky": "redhat", "almalinux": "redhat", "ol": "redhat", "amzn": "redhat",
		"suse": "suse", "opensuse": "suse", "sles": "suse",
		"arch": "arch", "alpine": "alpine",
	}
	for _, cand := range append([]string{id}, strings.Fields(idLike)...) {
		if fam, ok := known[strings.ToLower(cand)]; ok {
			return fam
		}
	}
	return strings.ToLower(id)
}

func kernelRelease() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	return utsString(u.Release[:])
}

// machineArch reports the host's architecture in Go's names (amd64, arm64,
// …) from uname, falling back to the soul binary's own.
func machineArch() string {
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		if a := goArch(utsString(u.Machine[:])); a != "" {
			return a
		}
	}
	return runtime.GOARCH
}

func goArch(machine string) string {
	switch machine {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	case "i386", "i486", "i586", "i686":
		return "386"
	case "armv6l", "armv7l", "armv8l":
		return "arm"
	case "ppc64le", "s390x", "riscv64", "loong64", "mips64", "mips64le":
		return machine
	}
	return ""
}

func utsString[T int8 | uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func initSystem() string {
	if fi, err := os.Stat("/run/systemd/system"); err == nil && fi.IsDir() {
		return "systemd"
	}
	return "sysv"
}

// ifaceAddrs maps interface names to their addresses in order.
type ifaceAddrs map[string][]net.IP

func interfaceAddrs() ifaceAddrs {
	out := ifaceAddrs{}
	list, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, ifc := range list {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		ips := []net.IP{}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				ips = append(ips, n.IP)
			}
		}
		out[ifc.Name] = ips
	}
	return out
}

func (ia ifaceAddrs) asFacts() map[string]any {
	m := make(map[string]any, len(ia))
	for name, ips := range ia {
		l := make([]any, len(ips))
		for i, ip := range ips {
			l[i] = ip.String()
		}
		m[name] = l
	}
	return m
}

// primaryIP is the first IPv4 address of the interface holding the default
// route (lowest metric) in /proc/net/route; without a default route, the
// first global unicast address of any interface (IPv4 first). No packet is
// sent to find it.
func primaryIP(ia ifaceAddrs) string {
	if f, err := os.Open("/proc/net/route"); err == nil {
		dev := defaultRouteIface(f)
		f.Close()
		for _, ip := range ia[dev] {
			if ip.To4() != nil {
				return ip.String()
			}
		}
	}
	names := make([]string, 0, len(ia))
	for n := range ia {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, want4 := range []bool{true, false} {
		for _, n := range names {
			for _, ip := range ia[n] {
				if ip.IsGlobalUnicast() && (ip.To4() != nil) == want4 {
					return ip.String()
				}
			}
		}
	}
	return ""
}

// defaultRouteIface reads /proc/net/route and returns the interface of the
// default route with the lowest metric, or "".
func defaultRouteIface(r io.Reader) string {
	sc := bufio.NewScanner(r)
	best, bestMetric := "", -1
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] == "Iface" {
			continue
		}
		dst, err1 := hex.DecodeString(f[1])
		mask, err2 := hex.DecodeString(f[7])
		flags, err3 := strconv.ParseUint(f[3], 16, 32)
		metric, err4 := strconv.Atoi(f[6])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		const routeUp = 0x1
		if !isZero(dst) || !isZero(mask) || flags&routeUp == 0 {
			continue
		}
		if bestMetric < 0 || metric < bestMetric {
			best, bestMetric = f[0], metric
		}
	}
	return best
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cpuInfo counts processors and reads the model name from /proc/cpuinfo.
func cpuInfo() (int64, string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return int64(runtime.NumCPU()), ""
	}
	defer f.Close()
	n, model := parseCPUInfo(f)
	if n == 0 {
		n = int64(runtime.NumCPU())
	}
	return n, model
}

func parseCPUInfo(r io.Reader) (int64, string) {
	var n int64
	model := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			n++
		case "model name", "Model", "cpu model", "Hardware":
			if model == "" {
				model = v
			}
		}
	}
	return n, model
}

func memTotalMB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseMemTotalMB(f)
}

func parseMemTotalMB(r io.Reader) int64 {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// BootID returns the kernel's id of the current boot
// (/proc/sys/kernel/random/boot_id), "" when it cannot be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
