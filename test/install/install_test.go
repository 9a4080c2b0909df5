package install

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// labName is the name of this package's lab ($SOULSTACK_LAB_NAME, default
// "install"; the other labs add a suffix to it). The names are fixed, so a
// crashed run's leftovers are removed by the next.
func labName() string {
	if n := os.Getenv("SOULSTACK_LAB_NAME"); n != "" {
		return n
	}
	return "install"
}

// env is a two-host systemd lab and a Keeper on its bridge address.
type env struct {
	lab    *lab.Lab
	url    string // the Keeper as souls reach it (https, bridge address)
	pin    string // sha256//… of the Keeper's public key, for curl
	client *apiclient.Client
	token  string // the archon's token and the Keeper CA fingerprint,
	fpr    string // for soulctl
}

// newEnv boots the lab (curl and openssh-server installable from the
// lab's repository, for install.sh and bootstrap) and starts a real Keeper serving the soul binary; both end
// with the test.
func newEnv(t *testing.T, cfg lab.Config) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	l, err := lab.New(ctx, cfg)
	// Another `go test` of this package on the machine may hold the name.
	for errors.Is(err, lab.ErrLocked) && ctx.Err() == nil {
		time.Sleep(time.Second)
		l, err = lab.New(ctx, cfg)
	}
	if err != nil {
		t.Fatalf("building the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	t.Logf("%d %s hosts up in %v", cfg.Hosts, cfg.Flavour, time.Since(start).Round(time.Millisecond))

	// The Keeper serves the soul binary for install.sh from soulDir.
	soulDir := t.TempDir()
	b, err := os.ReadFile(bins["soul"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(soulDir, "soul-linux-"+runtime.GOARCH), b, 0o755); err != nil {
		t.Fatal(err)
	}
	gw := l.GatewayIP()
	kc := config.Default()
	kc.DataDir = filepath.Join(t.TempDir(), "keeper")
	kc.ShutdownTimeout = config.Duration(2 * time.Second)
	kc.SoulDir = soulDir
	kc.TLS.Hosts = []string{gw}
	kctx, kcancel := context.WithCancel(context.Background())
	ini, err := keeper.Init(kctx, keeper.InitOptions{Keeper: kc, ArchonName: "root"})
	if err != nil {
		kcancel()
		t.Fatal(err)
	}
	k, err := keeper.New(kctx, keeper.Config{Keeper: kc, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		kcancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		kcancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Serve(kctx, ln) }()
	t.Cleanup(func() {
		kcancel()
		if err := <-done; err != nil {
			t.Errorf("keeper stopped: %v", err)
		}
		k.Close()
	})
	e := &env{lab: l, url: "https://" + ln.Addr().String(), token: ini.Token.Token, fpr: ini.Fingerprint}
	e.client, err = apiclient.New(e.url, ini.Token.Token, apiclient.WithFingerprint(ini.Fingerprint))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return e.client.Ready(ctx) == nil }, "keeper ready")
	v, err := e.client.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.pin = v.TLSPin
	return e
}

// readme returns the commands of one sh block of the README's install
// section, the block whose first command starts with prefix, with the
// README's placeholders replaced by this lab's Keeper, pin and token (and
// the machine's architecture).
func (e *env) readme(t *testing.T, prefix, token string, more ...string) []string {
	t.Helper()
	blocks, err := testutil.ReadmeCommands(filepath.Join(repoDir, "docs", "deployment.md"), readmeBegin, readmeEnd)
	if err != nil {
		t.Fatal(err)
	}
	cmds := testutil.FindCommands(blocks, prefix)
	if cmds == nil {
		t.Fatalf("README's install section has no sh block starting with %q", prefix)
	}
	r := strings.NewReplacer(append([]string{"'sha256//<pin>'", "'" + e.pin + "'", "https://keeper.example.com:8080", e.url,
		"<token>", token, "_amd64.deb", "_" + runtime.GOARCH + ".deb"}, more...)...)
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = r.Replace(c)
	}
	return out
}

// The markers around the install section of docs/deployment.md (moved
// there from the README).
const (
	readmeBegin = "<!-- install-check: begin"
	readmeEnd   = "<!-- install-check: end -->"
)

// joinToken creates a one-hour join token for coven "installed".
func (e *env) joinToken(t *testing.T) string {
	t.Helper()
	jt, err := e.client.CreateJoinToken(context.Background(), apitypes.CreateJoinTokenRequest{Covens: []string{"installed"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return jt.Token
}

// waitStatus waits until the Keeper reports soul sid with status.
func (e *env) waitStatus(t *testing.T, sid, status string) apitypes.Soul {
	t.Helper()
	var s apitypes.Soul
	testutil.WaitFor(t, 30*time.Second, func() bool {
		var err error
		s, err = e.client.GetSoul(context.Background(), sid)
		return err == nil && s.Status == status
	}, "soul %s %s (last: %q)", sid, status, s.Status)
	return s
}

// sh runs a script on h and fails the test on error.
func sh(t *testing.T, h *lab.Host, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, stderr, err := h.Exec(ctx, script)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr)
	}
	return strings.TrimSpace(out)
}

// try runs a script on h and returns its stdout+stderr and whether it
// succeeded.
func try(h *lab.Host, script string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, stderr, err := h.Exec(ctx, script)
	return strings.TrimSpace(out + stderr), err == nil
}

// journal returns the tail of the soul unit's journal on h, for failures.
func journal(h *lab.Host) string {
	out, _ := try(h, "journalctl -u soulstack-soul --no-pager -q | tail -40")
	return out
}

// TestInstall boots one four-host systemd lab and proves, on real dpkg,
// apt and systemd, with the commands of the README's install section: the
// .deb path on the first host (install without a Keeper configured starts
// nothing; with soul.env the unit's soul joins and connects; apt-get
// remove stops it and removes the binary, keeping its data; purge removes
// the data and the config) and the install.sh path (curl | sh with a join
// token) on the second, fresh host, soulctl souls bootstrap --ssh on the
// third and fourth, which run only sshd, and the keeper's .deb on the
// first.
func TestInstall(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	deb := buildDeb(t, "soulstack-soul")
	t.Logf("soulstack-soul .deb built in %v", time.Since(start).Round(time.Millisecond))
	e := newEnv(t, lab.Config{Name: labName(), Hosts: 4, Flavour: lab.FlavourSystemd, Packages: []string{"curl", "openssh-server"}})
	hosts := e.lab.Hosts()

	t.Run("deb", func(t *testing.T) {
		h := hosts[0]
		if err := h.CopyIn(deb, "/root/"+filepath.Base(deb)); err != nil {
			t.Fatal(err)
		}
		// The README's commands: dpkg -i, the Keeper and the token into
		// soul.env (the token by a shell builtin, off every command line),
		// systemctl enable --now.
		cmds := e.readme(t, "dpkg -i soulstack-soul_", e.joinToken(t))
		if len(cmds) != 4 || !strings.HasPrefix(cmds[2], "echo ") {
			t.Fatalf("README's soul package block: %q, want dpkg -i, the keeper, the token, systemctl", cmds)
		}
		// Installed with no Keeper configured: nothing starts, and dpkg
		// says why.
		out, ok := try(h, "cd /root && "+cmds[0])
		if !ok || !strings.Contains(out, "no Keeper configured") {
			t.Fatalf("%s (ok=%v):\n%s", cmds[0], ok, out)
		}
		if st, _ := try(h, "systemctl is-active soulstack-soul"); st != "inactive" {
			t.Fatalf("soulstack-soul is %q after dpkg -i without a Keeper, want inactive", st)
		}
		if got := sh(t, h, "stat -c %a /etc/soulstack/soul.env; test -x /usr/bin/soul && echo bin"); got != "600\nbin" {
			t.Fatalf("installed files: %q", got)
		}

		// Configured as the README says, then started by systemd.
		sh(t, h, cmds[1])
		runSecret(t, h, cmds[2])
		if got := sh(t, h, "grep -c '^SOULSTACK_KEEPER="+e.url+"$' /etc/soulstack/soul.env; stat -c %a /etc/soulstack/soul.env"); got != "1\n600" {
			t.Fatalf("soul.env after %s: %q", cmds[1], got)
		}
		sh(t, h, cmds[3])
		s := e.waitStatus(t, h.Name(), store.SoulConnected)
		if len(s.Covens) != 1 || s.Covens[0] != "installed" {
			t.Errorf("soul covens %v, want [installed] from the join token", s.Covens)
		}
		pid := sh(t, h, "systemctl show -p MainPID --value soulstack-soul")
		if pid == "0" || pid == "" {
			t.Fatalf("soulstack-soul MainPID %q\n%s", pid, journal(h))
		}
		if exe := sh(t, h, "readlink /proc/"+pid+"/exe"); exe != "/usr/bin/soul" {
			t.Fatalf("the unit's main process runs %q, want /usr/bin/soul", exe)
		}
		// The packaged soul takes the lean soul stream (ALPN soulstack/1).
		testutil.WaitFor(t, 10*time.Second, func() bool {
			out, _ := try(h, "journalctl -u soulstack-soul --no-pager -q | grep 'connected to keeper'")
			return strings.Contains(out, "transport=soulstack/1")
		}, "the .deb soul connected over soulstack/1\n%s", journal(h))

		// Installed again (an upgrade's path): the edited soul.env is kept
		// and the running soul restarted, connected again.
		envBefore := sh(t, h, "sha256sum /etc/soulstack/soul.env")
		sh(t, h, "cd /root && DEBIAN_FRONTEND=noninteractive "+cmds[0]+" </dev/null")
		if after := sh(t, h, "sha256sum /etc/soulstack/soul.env"); after != envBefore {
			t.Errorf("dpkg -i again changed the edited soul.env:\n%s", sh(t, h, "cat /etc/soulstack/soul.env"))
		}
		testutil.WaitFor(t, 30*time.Second, func() bool {
			p, _ := try(h, "systemctl show -p MainPID --value soulstack-soul")
			return p != pid && p != "0" && p != ""
		}, "the soul restarted by dpkg -i (MainPID was %s)", pid)
		pid = sh(t, h, "systemctl show -p MainPID --value soulstack-soul")
		e.waitStatus(t, h.Name(), store.SoulConnected)

		// apt-get remove: the soul stops, the binary and unit go, the key
		// and pinned Keeper stay (a reinstall reconnects as the same soul).
		sh(t, h, "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q soulstack-soul")
		if _, alive := try(h, "kill -0 "+pid); alive {
			t.Errorf("the soul (pid %s) still runs after apt-get remove", pid)
		}
		if st, _ := try(h, "systemctl is-active soulstack-soul"); st != "inactive" {
			t.Errorf("soulstack-soul is %q after apt-get remove, want inactive", st)
		}
		if out, _ := try(h, "for f in /usr/bin/soul /usr/lib/systemd/system/soulstack-soul.service; do test -e $f && echo $f left; done; test -d /var/lib/soulstack/soul && echo data-kept"); out != "data-kept" {
			t.Errorf("after apt-get remove:\n%s", out)
		}
		e.waitStatus(t, h.Name(), store.SoulDisconnected)

		// purge: the data directory and the config go too.
		sh(t, h, "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q soulstack-soul")
		if out, _ := try(h, "ls -d /var/lib/soulstack/soul /etc/soulstack/soul.env /usr/bin/soul 2>/dev/null; dpkg -s soulstack-soul 2>&1 | head -1"); strings.Contains(out, "/") || !strings.Contains(out, "not installed") {
			t.Errorf("after apt-get purge:\n%s", out)
		}
	})

	t.Run("install.sh", func(t *testing.T) {
		h := hosts[1]
		// A fresh host: no soul, no unit. curl comes from the lab's
		// repository (the host has no other network).
		if out, ok := try(h, "command -v soul; ls /etc/systemd/system/soulstack-soul.service"); ok {
			t.Fatalf("host not fresh:\n%s", out)
		}
		sh(t, h, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl >/dev/null")
		// The README's command, as the host's root runs it.
		cmds := e.readme(t, "{ curl ", e.joinToken(t))
		if len(cmds) != 1 || !strings.Contains(cmds[0], e.pin) || !strings.Contains(cmds[0], e.url+"/install.sh") {
			t.Fatalf("README's curl | sh block: %q", cmds)
		}
		out, ok := runSecret(t, h, cmds[0])
		if !ok {
			t.Fatalf("%s:\n%s", cmds[0], out)
		}
		e.waitStatus(t, h.Name(), store.SoulConnected)
		if st := sh(t, h, "systemctl is-active soulstack-soul; systemctl is-enabled soulstack-soul"); st != "active\nenabled" {
			t.Fatalf("soulstack-soul after install.sh: %q\n%s", st, journal(h))
		}
	})

	t.Run("bootstrap", func(t *testing.T) { testBootstrap(t, e, hosts[2], hosts[3]) })
	// The first host, its soul purged, takes the keeper package.
	t.Run("keeper-deb", func(t *testing.T) { testKeeperDeb(t, e, hosts[0]) })
}

// TestInstallSysV proves the README's curl | sh on a host without systemd
// (tini as PID 1, services run by their init scripts): install.sh detects
// it, installs /etc/init.d/soulstack-soul with its rc links and starts the
// soul, which connects; the script's stop and start work as on such hosts.
// On a second SysV host, soulctl souls bootstrap --sudo logs in as a
// non-root user and installs through sudo.
func TestInstallSysV(t *testing.T) {
	requireRoot(t)
	e := newEnv(t, lab.Config{Name: labName() + "-sysv", Hosts: 2, Flavour: lab.FlavourSysV, Packages: []string{"curl", "openssh-server", "sudo"}})
	h := e.lab.Hosts()[0]
	sh(t, h, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl >/dev/null")
	cmds := e.readme(t, "{ curl ", e.joinToken(t))
	if len(cmds) != 1 {
		t.Fatalf("README's curl | sh block: %q", cmds)
	}
	out, ok := runSecret(t, h, cmds[0])
	if !ok || !strings.Contains(out, "soul installed and started (sysv)") {
		t.Fatalf("%s:\n%s", cmds[0], out)
	}
	e.waitStatus(t, h.Name(), store.SoulConnected)
	if out, _ := try(h, "test -x /etc/init.d/soulstack-soul && ls /etc/rc2.d | grep -c soulstack-soul; test -e /etc/systemd/system/soulstack-soul.service && echo unit"); out != "1" {
		t.Errorf("after install.sh on a SysV host (want the init script and one rc2.d link, no unit):\n%s", out)
	}
	sh(t, h, "/etc/init.d/soulstack-soul stop")
	e.waitStatus(t, h.Name(), store.SoulDisconnected)
	sh(t, h, "/etc/init.d/soulstack-soul start")
	e.waitStatus(t, h.Name(), store.SoulConnected)

	t.Run("bootstrap-sudo", func(t *testing.T) { testBootstrapSudo(t, e, e.lab.Hosts()[1]) })
}

// runSecret runs a command holding a secret (a join token) on h the way an
// administrator types it: from a 0600 script file, so that the secret is
// in no command line (sh -c would put it in argv). It returns the
// output and whether the command succeeded.
func runSecret(t *testing.T, h *lab.Host, command string) (string, bool) {
	t.Helper()
	path := "/root/.soulstack-test-command"
	if err := h.WriteFile(path, []byte(command+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, ok := try(h, "sh "+path+"; rc=$?; rm -f "+path+"; exit $rc")
	return out, ok
}
