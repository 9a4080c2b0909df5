package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testPackages is the repository every lab test shares (one cache entry):
// a tiny package for package tests and Redis, which the e2e tests deploy.
var testPackages = []string{"hello", "redis-server", "redis-tools"}

// requireRoot skips a test that needs root, except in CI (CI=true), where
// every test must run, so a non-root run fails.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("lab tests need root (network namespaces, mounts, debootstrap); CI must run them as root")
	}
	t.Skip("skipping: lab tests need root (network namespaces, mounts, debootstrap)")
}

// newTestLab builds a lab of flavour that is closed when the test ends.
func newTestLab(t *testing.T, name, flavour string, hosts int, dir string) *Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	l, err := New(ctx, Config{Name: name, Hosts: hosts, Dir: dir, Packages: testPackages, Flavour: flavour})
	// Another `go test` of this package on the machine may hold the name.
	for errors.Is(err, ErrLocked) && ctx.Err() == nil {
		time.Sleep(time.Second)
		l, err = New(ctx, Config{Name: name, Hosts: hosts, Dir: dir, Packages: testPackages, Flavour: flavour})
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	st := l.Stats()
	t.Logf("lab %s up in %v: base %v (built %v), repo %v (built %v), %d hosts %v",
		name, time.Since(start).Round(time.Millisecond), st.Base.Round(time.Millisecond), st.BaseBuilt,
		st.Repo.Round(time.Millisecond), st.RepoBuilt, hosts, st.Hosts.Round(time.Millisecond))
	return l
}

// mustExec runs script in h and fails the test if it fails.
func mustExec(t *testing.T, h *Host, script string) string {
	t.Helper()
	out, _, err := h.Exec(t.Context(), script)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return strings.TrimSpace(out)
}

// eventually retries script in h until it succeeds or timeout passes.
func eventually(t *testing.T, h *Host, script string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, _, err := h.Exec(t.Context(), script)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLab checks a lab of sysv hosts (tini as PID 1); TestSystemdLab
// checks what differs on systemd hosts.
func TestLab(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "lab")
	l := newTestLab(t, "labtest", FlavourSysV, 2, dir)
	h1, h2 := l.Hosts()[0], l.Hosts()[1]

	t.Run("identity", func(t *testing.T) {
		for _, h := range l.Hosts() {
			if got := mustExec(t, h, "hostname"); got != h.Name() {
				t.Errorf("hostname = %q, want %q", got, h.Name())
			}
			if got := mustExec(t, h, "ip -4 -o addr show dev eth0"); !strings.Contains(got, " "+h.IP()+"/24 ") {
				t.Errorf("%s eth0: %q, want address %s", h.Name(), got, h.IP())
			}
			if got := mustExec(t, h, "getent hosts "+h.Name()); !strings.HasPrefix(got, h.IP()+" ") {
				t.Errorf("%s resolves itself as %q, want %s", h.Name(), got, h.IP())
			}
			if got := mustExec(t, h, "tr '\\0' ' ' </proc/1/cmdline"); !strings.Contains(got, "tini") {
				t.Errorf("%s PID 1 = %q, want tini", h.Name(), got)
			}
		}
		if h1.IP() == h2.IP() {
			t.Errorf("both hosts have %s", h1.IP())
		}
	})

	t.Run("sysctl", func(t *testing.T) {
		mustExec(t, h1, "sysctl -w net.core.somaxconn=1234")
		if got := mustExec(t, h2, "sysctl -n net.core.somaxconn"); got == "1234" {
			t.Error("net.* sysctls are shared between hosts")
		}
		if _, _, err := h1.Exec(t.Context(), "sysctl -w vm.swappiness=1"); err == nil {
			t.Error("a host may change the machine's kernel settings")
		}
	})

	t.Run("own PID namespace", func(t *testing.T) {
		p, err := h2.Start(t.Context(), []string{"sleep", "1000"}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		// Start returns once nsenter has forked it, maybe before its exec.
		eventually(t, h2, `test "$(pgrep -x sleep | wc -l)" = 2`, 5*time.Second) // tini's and ours
		if got := mustExec(t, h1, "pgrep -x sleep | wc -l"); got != "1" {        // tini's only
			t.Errorf("h1 sees %s sleep processes, want only its own 1", got)
		}
	})

	t.Run("network", func(t *testing.T) {
		mustExec(t, h1, "ping -c1 -W2 "+h2.IP())
		mustExec(t, h1, "ping -c1 -W2 lab-host-2")
		// TCP from host to host, through a process started in h2.
		logFile := filepath.Join(t.TempDir(), "nc.log")
		p, err := h2.Start(t.Context(), []string{"nc", "-l", "7777"}, logFile)
		if err != nil {
			t.Fatal(err)
		}
		if p.PID() == 0 {
			t.Fatal("Start did not see the process")
		}
		eventually(t, h1, "echo hello-from-h1 | nc -N -w 2 "+h2.IP()+" 7777", 5*time.Second)
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("nc did not exit after its connection closed")
		}
		if data, _ := os.ReadFile(logFile); !strings.Contains(string(data), "hello-from-h1") {
			t.Errorf("h2 received %q, want hello-from-h1", data)
		}
		// And from a host to the machine (where the Keeper listens).
		ln, err := net.Listen("tcp", net.JoinHostPort(l.GatewayIP(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Write([]byte("keeper\n"))
				c.Close()
			}
		}()
		if got := mustExec(t, h2, "nc -w 2 lab-gateway "+strconv.Itoa(port)); got != "keeper" {
			t.Errorf("h2 read %q from the gateway, want keeper", got)
		}
	})

	t.Run("no route out", func(t *testing.T) {
		_, _, err := h1.Exec(t.Context(), "nc -z -w 2 198.51.100.1 80")
		if err == nil {
			t.Error("a host reached an address outside the lab")
		}
	})

	t.Run("packages", func(t *testing.T) {
		mustExec(t, h1, "apt-get update -q && apt-get install -y -q hello")
		if got := mustExec(t, h1, "hello"); got != "Hello, world!" {
			t.Errorf("hello printed %q", got)
		}
		if _, _, err := h2.Exec(t.Context(), "dpkg -s hello"); err == nil {
			t.Error("hello is installed on lab-host-2 too: the hosts share a package database")
		}
		status, err := os.ReadFile(filepath.Join(l.BaseDir(), "var/lib/dpkg/status"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(status), "Package: hello\n") {
			t.Error("installing in a host changed the cached base")
		}
	})

	t.Run("cut link", func(t *testing.T) {
		if err := h2.CutLink(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h1.Exec(t.Context(), "ping -c1 -W1 "+h2.IP()); err == nil {
			t.Error("h2 answers pings with its link cut")
		}
		if _, _, err := h2.Exec(t.Context(), "nc -z -w 1 "+l.GatewayIP()+" 9"); err == nil {
			t.Error("h2 reaches the gateway with its link cut")
		}
		if err := h2.RestoreLink(t.Context()); err != nil {
			t.Fatal(err)
		}
		eventually(t, h1, "ping -c1 -W1 "+h2.IP(), 10*time.Second)
	})

	t.Run("kill all and boot", func(t *testing.T) {
		p, err := h1.Start(t.Context(), []string{"sleep", "1000"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := h1.KillAll(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a process survived KillAll")
		}
		if _, _, err := h1.Exec(t.Context(), "true"); !errors.Is(err, ErrHostDown) {
			t.Fatalf("Exec on a killed host: %v, want ErrHostDown", err)
		}
		start := time.Now()
		if err := h1.Boot(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("boot took %v", time.Since(start).Round(time.Millisecond))
		if got := mustExec(t, h1, "hostname && hello"); got != h1.Name()+"\nHello, world!" {
			t.Errorf("after boot: %q, want the hostname and hello still installed", got)
		}
		mustExec(t, h1, "ping -c1 -W2 "+h2.IP())
	})

	t.Run("copy in", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "tool")
		if err := os.WriteFile(src, []byte("#!/bin/sh\necho tool-ran\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := h2.CopyIn(src, "/usr/local/bin/tool"); err != nil {
			t.Fatal(err)
		}
		if got := mustExec(t, h2, "tool"); got != "tool-ran" {
			t.Errorf("tool printed %q", got)
		}
		if _, err := os.Stat(filepath.Join(h1.RootDir(), "usr/local/bin/tool")); err == nil {
			t.Error("a file copied into h2 appeared in h1")
		}
	})

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, l.names, dir)
}

// assertGone checks that nothing of lab n is left on the machine.
func assertGone(t *testing.T, n names, dir string) {
	t.Helper()
	if mps, err := mountsUnder(dir); err != nil || len(mps) > 0 {
		t.Errorf("mounts left under %s: %v %v", dir, mps, err)
	}
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if n.isNetns(e.Name()) {
			t.Errorf("network namespace %s left", e.Name())
		}
	}
	ifaces, _ := net.Interfaces()
	for _, ifc := range ifaces {
		if ifc.Name == n.bridge() || n.isVeth(ifc.Name) {
			t.Errorf("interface %s left", ifc.Name)
		}
	}
	if out, err := exec.Command("ip", "rule", "show").Output(); err != nil || strings.Contains(string(out), n.bridge()) {
		t.Errorf("routing rule for %s left (or ip rule failed: %v):\n%s", n.bridge(), err, out)
	}
	if _, err := os.Stat(n.statePath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file %s left: %v", n.statePath(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hosts")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host directories left in %s: %v", dir, err)
	}
	if cg := labCgroup(n); cg != "" {
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left: %v", cg, err)
		}
	}
	if socks, _ := filepath.Glob(filepath.Join(runDir, n.lab+".h*.notify")); len(socks) > 0 {
		t.Errorf("notify sockets left: %v", socks)
	}
}
