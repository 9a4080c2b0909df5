package soul

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCollectFactsShape(t *testing.T) {
	facts, err := CollectFacts(FactsOptions{SID: "soul-1.example"})
	if err != nil {
		t.Fatal(err)
	}
	if facts["sid"] != "soul-1.example" {
		t.Errorf("sid = %v, want the override", facts["sid"])
	}
	host, _ := os.Hostname()
	if facts["hostname"] != host {
		t.Errorf("hostname = %v, want %s", facts["hostname"], host)
	}
	osf := facts["os"].(map[string]any)
	if osf["arch"] != runtime.GOARCH {
		t.Errorf("os.arch = %v, want %s on this test host", osf["arch"], runtime.GOARCH)
	}
	if osf["family"] == "" || osf["name"] == "" {
		t.Errorf("os facts empty: %v", osf)
	}
	if k, _ := facts["kernel"].(string); k == "" {
		t.Errorf("kernel is empty")
	}
	if c := facts["cpu"].(map[string]any)["count"].(int64); c < 1 {
		t.Errorf("cpu.count = %d", c)
	}
	if m := facts["memory"].(map[string]any)["total_mb"].(int64); m < 16 {
		t.Errorf("memory.total_mb = %d", m)
	}
	if init := facts["init"]; init != "systemd" && init != "sysv" {
		t.Errorf("init = %v", init)
	}
	if diff := cmp.Diff([]any{}, facts["covens"]); diff != "" {
		t.Errorf("covens (-want +got):\n%s", diff)
	}
	nw := facts["network"].(map[string]any)
	ifaces := nw["interfaces"].(map[string]any)
	if _, ok := ifaces["lo"]; !ok {
		t.Errorf("interfaces lack lo: %v", ifaces)
	}
	if ip, _ := nw["primary_ip"].(string); ip != "" {
		found := false
		for _, addrs := range ifaces {
			for _, a := range addrs.([]any) {
				found = found || a == ip
			}
		}
		if !found || net.ParseIP(ip) == nil {
			t.Errorf("primary_ip %q is not an address of any interface %v", ip, ifaces)
		}
	}
	// The soulprint travels as JSON and must survive it unchanged in shape.
	if _, err := json.Marshal(facts); err != nil {
		t.Errorf("facts are not JSON friendly: %v", err)
	}
}

func TestCollectFactsDebianFamily(t *testing.T) {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil || !strings.Contains(string(b), "ID=debian") {
		t.Skip("not a Debian host; the CI host (Debian bookworm) runs this")
	}
	facts, err := CollectFacts(FactsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	osf := facts["os"].(map[string]any)
	if osf["family"] != "debian" || osf["name"] != "debian" || osf["version"] == "" {
		t.Errorf("os = %v, want the debian family with a version", osf)
	}
	if sid, _ := facts["sid"].(string); sid == "" {
		t.Errorf("default sid is empty")
	}
}

func TestCollectFactsRootOSRelease(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	osr := "ID=rocky\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\nPRETTY_NAME=\"Rocky Linux 9.3\"\n"
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte(osr), 0o644); err != nil {
		t.Fatal(err)
	}
	facts, err := CollectFacts(FactsOptions{SID: "x", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	got := facts["os"].(map[string]any)
	delete(got, "arch")
	want := map[string]any{"family": "redhat", "name": "rocky", "distribution": "rocky", "version": "9.3", "codename": "", "pretty_name": "Rocky Linux 9.3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("os (-want +got):\n%s", diff)
	}
}

func TestOSFamily(t *testing.T) {
	tests := []struct{ id, like, want string }{
		{"debian", "", "debian"},
		{"ubuntu", "debian", "debian"},
		{"pop", "ubuntu debian", "debian"},
		{"rhel", "fedora", "redhat"},
		{"almalinux", "rhel centos fedora", "redhat"},
		{"opensuse-leap", "suse opensuse", "suse"},
		{"alpine", "", "alpine"},
		{"NixOS", "", "nixos"},
	}
	for _, tt := range tests {
		if got := osFamily(tt.id, tt.like); got != tt.want {
			t.Errorf("osFamily(%q, %q) = %q, want %q", tt.id, tt.like, got, tt.want)
		}
	}
}

func TestParseOSRelease(t *testing.T) {
	in := "# comment\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID='12'\nVERSION_CODENAME=bookworm\n\nBAD LINE\n"
	want := map[string]string{"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)", "ID": "debian", "VERSION_ID": "12", "VERSION_CODENAME": "bookworm"}
	if diff := cmp.Diff(want, parseOSRelease(strings.NewReader(in))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDefaultRouteIface(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	tests := []struct {
		name, table, want string
	}{
		{"single default", "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\nbr0\t0036E70A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", "eth0"},
		{"lowest metric wins", "wlan0\t00000000\t0100A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\neth1\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", "eth1"},
		{"down route ignored", "eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n", ""},
		{"no default", "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultRouteIface(strings.NewReader(header + tt.table)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrimaryIPFallback(t *testing.T) {
	ia := ifaceAddrs{
		"lo":   {net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		"eth9": {net.ParseIP("fe80::1"), net.ParseIP("2001:db8::5"), net.ParseIP("198.51.100.7")},
	}
	// The test host's default route names an interface not in ia, so the
	// fallback picks the first global IPv4 address.
	if got := primaryIP(ia); got != "198.51.100.7" {
		t.Errorf("primaryIP = %q, want the global IPv4 address", got)
	}
}

func TestParseCPUAndMem(t *testing.T) {
	cpu := "processor\t: 0\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n"
	n, model := parseCPUInfo(strings.NewReader(cpu))
	if n != 2 || model != "AMD EPYC" {
		t.Errorf("parseCPUInfo = %d, %q", n, model)
	}
	if got := parseMemTotalMB(strings.NewReader("MemTotal:       24684092 kB\nMemFree: 1 kB\n")); got != 24105 {
		t.Errorf("parseMemTotalMB = %d, want 24105", got)
	}
}

func TestFQDNFromHosts(t *testing.T) {
	hosts := "127.0.0.1 localhost\n127.0.1.1 web1.dc1.example.com web1 # comment\n"
	tests := []struct{ host, want string }{
		{"web1", "web1.dc1.example.com"},
		{"db1", ""},
		{"localhost", ""},
	}
	for _, tt := range tests {
		if got := fqdnFromHosts(strings.NewReader(hosts), tt.host); got != tt.want {
			t.Errorf("fqdnFromHosts(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

func TestGoArch(t *testing.T) {
	for machine, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386", "ppc64le": "ppc64le", "vax": ""} {
		if got := goArch(machine); got != want {
			t.Errorf("goArch(%q) = %q, want %q", machine, got, want)
		}
	}
}

func BenchmarkCollectFacts(b *testing.B) {
	for b.Loop() {
		if _, err := CollectFacts(FactsOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
