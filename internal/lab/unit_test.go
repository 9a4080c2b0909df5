package lab

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfigNormalize(t *testing.T) {
	t.Setenv(EnvCache, "/tmp/lab-cache")
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Name: "e2e-1", Hosts: 3}, ""},
		{"empty name", Config{Hosts: 1}, "lab name"},
		{"upper case", Config{Name: "Demo", Hosts: 1}, "lab name"},
		{"too long", Config{Name: strings.Repeat("a", 25), Hosts: 1}, "lab name"},
		{"no hosts", Config{Name: "demo"}, "0 hosts"},
		{"too many hosts", Config{Name: "demo", Hosts: 201}, "201 hosts"},
		{"bad package", Config{Name: "demo", Hosts: 1, Packages: []string{"redis; rm -rf /"}}, "not a Debian package name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.normalize()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("normalize() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Dir != "/var/lib/soulstack-lab/labs/e2e-1" || got.CacheDir != "/tmp/lab-cache" {
				t.Errorf("defaults: dir %q cache %q", got.Dir, got.CacheDir)
			}
		})
	}
}

func TestNames(t *testing.T) {
	n := namesFor(strings.Repeat("x", 24))
	for _, ifname := range []string{n.bridge(), n.veth(maxHosts)} {
		if len(ifname) > 15 {
			t.Errorf("interface name %q is longer than 15 bytes", ifname)
		}
	}
	a, ab := namesFor("a"), namesFor("a-b")
	if a.isNetns(ab.netns(1)) {
		t.Errorf("lab a claims lab a-b's namespace %s", ab.netns(1))
	}
	if !a.isNetns(a.netns(12)) || a.isNetns("sslab-a-h") || a.isNetns("sslab-a-hx") {
		t.Error("isNetns matches the wrong names")
	}
	if !a.isVeth(a.veth(3)) || a.isVeth(a.bridge()) || a.isVeth(ab.veth(3)) {
		t.Error("isVeth matches the wrong names")
	}
}

func TestAddresses(t *testing.T) {
	p := netip.MustParsePrefix("10.231.7.0/24")
	if got := gatewayAddr(p).String(); got != "10.231.7.1" {
		t.Errorf("gateway %s", got)
	}
	if got := hostAddr(p, 1).String(); got != "10.231.7.11" {
		t.Errorf("host 1 %s", got)
	}
	if got := hostAddr(p, maxHosts).String(); got != "10.231.7.210" {
		t.Errorf("host %d %s", maxHosts, got)
	}
}

func TestAptSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sources.list", "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\ndeb-src http://mirror.example/debian bookworm main\n")
	write("sources.list.d/debian.sources", `Types: deb
URIs: http://archive.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: https://vendor.example/apt
Suites: nodistro
Components: main
`)
	all, err := readAptSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("parsed %d sources, want 5: %+v", len(all), all)
	}
	archive, srcs, err := debianSources(all, "")
	if err != nil {
		t.Fatal(err)
	}
	if archive.URI != "http://mirror.example/debian" || archive.SignedBy != "/k.gpg" {
		t.Errorf("archive %+v", archive)
	}
	var lines []string
	for _, s := range srcs {
		lines = append(lines, s.line())
	}
	want := []string{
		"deb [signed-by=/k.gpg] http://mirror.example/debian bookworm main",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://archive.example/debian bookworm main",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://archive.example/debian bookworm-updates main",
		"deb http://security.example/debian-security bookworm-security main",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("sources:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	archive, srcs, err = debianSources(all, "http://override.example/debian")
	if err != nil {
		t.Fatal(err)
	}
	if archive.URI != "http://override.example/debian" || len(srcs) != 3 || srcs[2].Suite != "bookworm-security" {
		t.Errorf("with a mirror: archive %+v, sources %+v", archive, srcs)
	}
	if _, _, err := debianSources(nil, ""); err == nil || !strings.Contains(err.Error(), EnvMirror) {
		t.Errorf("no sources: %v, want an error naming %s", err, EnvMirror)
	}
}

func TestSimulationParse(t *testing.T) {
	sim := `NOTE: This is only a simulation!
Inst liblzf1 (3.6-3 Debian:12.11/stable [amd64])
Inst libc6 [2.36-9+deb12u9] (2.36-9+deb12u10 Debian-Security:12/stable-security, Debian:12.11/stable [amd64])
Inst redis-tools (5:7.0.15-1~deb12u4 Debian-Security:12/stable-security [amd64])
Conf liblzf1 (3.6-3 Debian:12.11/stable [amd64])`
	var got []string
	for _, line := range strings.Split(sim, "\n") {
		if m := instRE.FindStringSubmatch(line); m != nil {
			got = append(got, archiveName(m[1], m[2], m[3]))
		}
	}
	want := []string{
		"liblzf1_3.6-3_amd64.deb",
		"libc6_2.36-9+deb12u10_amd64.deb",
		"redis-tools_5%3a7.0.15-1~deb12u4_amd64.deb",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWriteIndex(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("skipping: needs dpkg-deb (Debian package dpkg)")
	}
	src := t.TempDir()
	ctrl := "Package: lab-dummy\nVersion: 1:1.0-1\nArchitecture: all\nMaintainer: lab <lab@example.org>\nDescription: dummy\n two lines\n"
	if err := os.MkdirAll(filepath.Join(src, "DEBIAN"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "DEBIAN/control"), []byte(ctrl), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	deb := filepath.Join(repo, archiveName("lab-dummy", "1:1.0-1", "all"))
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", src, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, out)
	}
	if err := writeIndex(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	pkgs, err := os.ReadFile(filepath.Join(repo, "Packages"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Package: lab-dummy\n", "Version: 1:1.0-1\n", " two lines\n",
		"Filename: ./lab-dummy_1%3a1.0-1_all.deb\n", "SHA256: "} {
		if !strings.Contains(string(pkgs), want) {
			t.Errorf("Packages lacks %q:\n%s", want, pkgs)
		}
	}
	release, err := os.ReadFile(filepath.Join(repo, "Release"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(release), " Packages\n") {
		t.Errorf("Release does not list Packages:\n%s", release)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/a\040b/c\134d`); got != `/a b/c\d` {
		t.Errorf("got %q", got)
	}
}
