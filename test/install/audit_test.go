package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestInstallAudit replays the install findings of the December re-audit
// (issue 31) on systemd lab hosts: the keeper and soul packages on one host
// in both orders and through upgrades of each; and install.sh's paths on a
// stock host: --help and a wrong pin through the pipe, a host whose SID is
// bound to another key refused before it is touched, the join token in no
// process's command line during the install, rekey with `soul key`, the
// pending path without a token, and --uninstall leaving nothing behind.
func TestInstallAudit(t *testing.T) {
	requireRoot(t)
	soulDeb, keeperDeb := buildDeb(t, "soulstack-soul"), buildDeb(t, "soulstack-keeper")
	e := newEnv(t, lab.Config{Name: labName() + "-audit", Hosts: 3, Flavour: lab.FlavourSystemd, Packages: []string{"curl"}})
	hosts := e.lab.Hosts()
	for _, h := range hosts[:2] {
		for _, deb := range []string{soulDeb, keeperDeb} {
			if err := h.CopyIn(deb, "/root/"+filepath.Base(deb)); err != nil {
				t.Fatal(err)
			}
		}
	}
	soulDpkg := "cd /root && DEBIAN_FRONTEND=noninteractive dpkg -i " + filepath.Base(soulDeb) + " </dev/null"
	keeperDpkg := "cd /root && DEBIAN_FRONTEND=noninteractive dpkg -i " + filepath.Base(keeperDeb) + " </dev/null"
	keeperUp := func(t *testing.T, h *lab.Host, when string) {
		t.Helper()
		sh(t, h, "systemctl restart soulstack-keeper")
		testutil.WaitFor(t, 30*time.Second, func() bool {
			out, _ := try(h, "ss -Hltn 'sport = :8080'")
			return out != ""
		}, "the keeper serving %s\n%s", when, keeperJournal(h))
		if got := sh(t, h, "stat -c %a /var/lib/soulstack /var/lib/soulstack/keeper /var/lib/soulstack/soul"); got != "755\n700\n700" {
			t.Errorf("modes of /var/lib/soulstack, its keeper and soul directories %s: %q, want 755 700 700", when, got)
		}
	}
	keeperInit := func(t *testing.T, h *lab.Host) {
		sh(t, h, "runuser -u soulstack -- keeper init --config /etc/soulstack/keeper.yaml > /root/admin.token")
		sh(t, h, "systemctl enable --now soulstack-keeper")
	}

	t.Run("keeper-then-soul", func(t *testing.T) {
		h := hosts[0]
		sh(t, h, keeperDpkg)
		keeperInit(t, h)
		sh(t, h, soulDpkg)
		keeperUp(t, h, "after the soul package")
		sh(t, h, soulDpkg) // the soul's upgrade
		keeperUp(t, h, "after the soul's upgrade")
		sh(t, h, keeperDpkg) // the keeper's upgrade
		keeperUp(t, h, "after the keeper's upgrade")
	})
	t.Run("soul-then-keeper", func(t *testing.T) {
		h := hosts[1]
		sh(t, h, soulDpkg)
		sh(t, h, keeperDpkg)
		keeperInit(t, h)
		keeperUp(t, h, "installed after the soul package")
		sh(t, h, keeperDpkg)
		keeperUp(t, h, "after the keeper's upgrade")
		sh(t, h, soulDpkg)
		keeperUp(t, h, "after the soul's upgrade")
	})
	t.Run("install.sh", func(t *testing.T) { testInstallScriptAudit(t, e, hosts[2]) })
}

// fsSnapshot lists the host's files (path, type and mode, owner) and unit
// files, leaving out what a running system changes by itself.
func fsSnapshot(t *testing.T, h *lab.Host) string {
	t.Helper()
	return sh(t, h, `find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /var/tmp -o -path /var/log/journal -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/systemd \) -prune -o -printf '%p %M %u\n' | sort; systemctl list-unit-files --no-legend --no-pager | sort`)
}

func testInstallScriptAudit(t *testing.T, e *env, h *lab.Host) {
	ctx := context.Background()
	sh(t, h, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl >/dev/null")
	if _, ok := try(h, "command -v openssl"); ok {
		t.Fatalf("%s has openssl: the rekey case needs a stock host without it", h.Name())
	}
	before := fsSnapshot(t, h)
	line := func(token string) string {
		cmds := e.readme(t, "{ curl ", token)
		if len(cmds) != 1 {
			t.Fatalf("README's curl | sh block: %q", cmds)
		}
		return cmds[0]
	}
	pipe := strings.SplitN(line("x"), " | ", 2)[0] + " | sh -s -- "

	// --help through the pipe prints the help.
	if out := sh(t, h, pipe+"--help"); !strings.Contains(out, "--uninstall") || !strings.Contains(out, "SOUL_JOIN_TOKEN=") {
		t.Errorf("install.sh --help through sh:\n%s", out)
	}
	// A wrong pin: the README's line fails, and nothing is installed.
	wrong := strings.Replace(line(e.joinToken(t)), e.pin, "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", 1)
	if out, ok := runSecret(t, h, wrong); ok {
		t.Errorf("the README's line with a wrong pin succeeded:\n%s", out)
	}

	// Another soul (a real process on the machine) holds this host's SID
	// under its own key: install.sh says so before touching the host.
	impostor := t.TempDir()
	imp := exec.Command(bins["soul"], "run", "--keeper", e.url, "--sid", h.Name(), "--data-dir", impostor)
	imp.Env = append(os.Environ(), "SOUL_JOIN_TOKEN="+e.joinToken(t))
	if err := imp.Start(); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, h.Name(), store.SoulConnected)
	_ = imp.Process.Kill()
	_ = imp.Wait()
	out, ok := runSecret(t, h, line(e.joinToken(t)))
	if ok || !strings.Contains(out, "already bound to another key") || !strings.Contains(out, "nothing installed") {
		t.Fatalf("install.sh on a host whose SID is bound to another key (ok=%v):\n%s", ok, out)
	}
	if got := fsSnapshot(t, h); got != before {
		t.Fatalf("the refused install touched the host:\n%s", diffLines(before, got))
	}
	if _, err := e.client.DeleteSoul(ctx, h.Name()); err != nil {
		t.Fatal(err)
	}

	// The install with a one-use token: no process's command line (the
	// machine's /proc sees the host's processes too) ever shows it.
	jt := e.joinToken(t)
	if err := h.WriteFile("/root/.soulstack-test-command", []byte(line(jt)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var out3 string
	var ok3 bool
	go func() {
		defer close(done)
		out3, ok3 = try(h, "sh /root/.soulstack-test-command; rc=$?; rm -f /root/.soulstack-test-command; exit $rc")
	}()
	leaks := pollCmdlines(done, jt)
	<-done
	if len(leaks) > 0 {
		t.Errorf("the join token was in the command line of: %q", leaks)
	}
	if !ok3 {
		t.Fatalf("install.sh: %s", out3)
	}
	e.waitStatus(t, h.Name(), store.SoulConnected)

	// Rekey on a stock host: the soul's key is replaced (a reinstall);
	// `soul key` prints the new one in the form rekey takes.
	sh(t, h, "systemctl stop soulstack-soul && rm /var/lib/soulstack/soul/soul.key && systemctl start soulstack-soul")
	testutil.WaitFor(t, 30*time.Second, func() bool { _, ok := try(h, "test -e /var/lib/soulstack/soul/soul.key"); return ok }, "a new soul key")
	if _, err := e.client.RekeySoul(ctx, h.Name(), sh(t, h, "soul key")); err != nil {
		t.Fatalf("soulctl souls rekey with soul key's output: %v", err)
	}
	sh(t, h, "systemctl restart soulstack-soul")
	e.waitStatus(t, h.Name(), store.SoulConnected)

	// --uninstall, then the pending path: no token, the soul pins the
	// keeper from the script, waits as pending and connects once accepted.
	sh(t, h, pipe+"--uninstall")
	if _, err := e.client.DeleteSoul(ctx, h.Name()); err != nil {
		t.Fatal(err)
	}
	noToken := strings.Replace(line("x"), "SOUL_JOIN_TOKEN='x' ", "", 1)
	if out, ok := try(h, noToken); !ok || !strings.Contains(out, "wait as pending") {
		t.Fatalf("install.sh without a token (ok=%v):\n%s", ok, out)
	}
	e.waitStatus(t, h.Name(), store.SoulPending)
	if st := sh(t, h, "systemctl is-active soulstack-soul; systemctl show -p NRestarts --value soulstack-soul"); st != "active\n0" {
		t.Fatalf("the pending soul's unit: %q\n%s", st, journal(h))
	}
	if _, err := e.client.AcceptSoul(ctx, h.Name(), []string{"pending"}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, h.Name(), store.SoulConnected)

	// --uninstall leaves nothing behind.
	if out := sh(t, h, pipe+"--uninstall"); !strings.Contains(out, "uninstalled") {
		t.Errorf("--uninstall: %s", out)
	}
	if got := fsSnapshot(t, h); got != before {
		t.Errorf("after --uninstall the host differs from before the install:\n%s", diffLines(before, got))
	}
	e.waitStatus(t, h.Name(), store.SoulDisconnected)
}

// pollCmdlines reads every process's command line on the machine until
// done is closed and returns those holding secret, the secret masked.
func pollCmdlines(done <-chan struct{}, secret string) []string {
	var leaks []string
	for {
		select {
		case <-done:
			return leaks
		default:
		}
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(b), secret) {
				leaks = append(leaks, strings.ReplaceAll(strings.ReplaceAll(string(b), secret, "<token>"), "\x00", " "))
			}
		}
	}
}

// diffLines lists the lines only in a (-) or only in b (+).
func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var d strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if !mb[l] {
			d.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ma[l] {
			d.WriteString("+ " + l + "\n")
		}
	}
	return d.String()
}

// keeperJournal is the tail of the keeper unit's journal on h.
func keeperJournal(h *lab.Host) string {
	out, _ := try(h, "journalctl -u soulstack-keeper --no-pager -q | tail -20")
	return out
}
