package install

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// testBootstrap runs the README's `soulctl souls bootstrap --ssh
// root@web-1 --ssh root@web-2:2222 --covens prod,web` against two fresh
// systemd hosts that run only sshd (web-2's on port 2222), as a user
// would: after soulctl login, the key in an ssh-agent, the host keys in
// ~/.ssh/known_hosts. web-2 has no curl at first: it fails with one line
// and is left as it was while web-1's soul connects; with curl installed,
// the same command skips web-1 and onboards web-2.
func testBootstrap(t *testing.T, e *env, web1, web2 *lab.Host) {
	for _, h := range []*lab.Host{web1, web2} {
		if out, ok := try(h, "command -v soul; ls /etc/systemd/system/soulstack-soul.service"); ok {
			t.Fatalf("%s not fresh:\n%s", h.Name(), out)
		}
	}
	sh(t, web1, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server curl >/dev/null")
	sh(t, web2, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server >/dev/null")
	if err := web2.WriteFile("/etc/ssh/sshd_config.d/port.conf", []byte("Port 2222\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, web2, "systemctl restart ssh")
	if out, ok := try(web2, "command -v curl"); ok {
		t.Fatalf("%s has curl (%s): the no-curl case needs a host without it", web2.Name(), out)
	}

	// The user's key in an ssh-agent, authorized for root on both hosts.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	sock := serveAgent(t, priv, filepath.Join(home, "agent.sock"))
	var knownHosts strings.Builder
	for _, h := range []*lab.Host{web1, web2} {
		sh(t, h, "install -d -m 700 /root/.ssh")
		if err := h.WriteFile("/root/.ssh/authorized_keys", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(sh(t, h, "cat /etc/ssh/ssh_host_ed25519_key.pub"))
		if len(f) < 2 {
			t.Fatalf("%s host key %q", h.Name(), f)
		}
		host := h.IP()
		if h == web2 {
			host = "[" + h.IP() + "]:2222"
		}
		knownHosts.WriteString(host + " " + f[0] + " " + f[1] + "\n")
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(knownHosts.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// soulctl as the user runs it: logged in, its config under $HOME.
	env := []string{"HOME=" + home, "SSH_AUTH_SOCK=" + sock, "PATH=" + binDir + ":" + os.Getenv("PATH")}
	soulctl := func(script string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := soulctl("soulctl login --keeper " + e.url + " --fingerprint " + e.fpr + " --token " + e.token); err != nil {
		t.Fatalf("soulctl login: %v\n%s", err, out)
	}
	cmds := e.readme(t, "soulctl souls bootstrap", "", "root@web-1", "root@"+web1.IP(), "root@web-2:2222", "root@"+web2.IP()+":2222")
	if len(cmds) != 1 || !strings.Contains(cmds[0], web1.IP()) || !strings.Contains(cmds[0], web2.IP()+":2222") {
		t.Fatalf("README's bootstrap block: %q", cmds)
	}

	t1 := "root@" + web1.IP() + ":22: "
	t2 := "root@" + web2.IP() + ":2222: "
	out, err := soulctl(cmds[0])
	if err == nil || !strings.Contains(out, t1+"connected (sid "+web1.Name()+")") ||
		!strings.Contains(out, t2+"failed (sid "+web2.Name()+"): installing: install.sh: curl is needed to download the soul\n") {
		t.Fatalf("%s with curl missing on %s: %v\n%s\n%s", cmds[0], web2.Name(), err, out, journal(web1))
	}
	if got, _ := try(web2, "ls -d /usr/local/bin/soul /etc/soulstack /etc/systemd/system/soulstack-soul.service /var/lib/soulstack 2>/dev/null"); got != "" {
		t.Errorf("%s after the failed install:\n%s", web2.Name(), got)
	}

	sh(t, web2, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl >/dev/null")
	out, err = soulctl(cmds[0])
	if err != nil || !strings.Contains(out, t1+"skipped") || !strings.Contains(out, t2+"connected (sid "+web2.Name()+")") {
		t.Fatalf("%s again: %v\n%s\n%s", cmds[0], err, out, journal(web2))
	}
	for _, h := range []*lab.Host{web1, web2} {
		s := e.waitStatus(t, h.Name(), store.SoulConnected)
		if !slices.Equal(s.Covens, []string{"prod", "web"}) {
			t.Errorf("%s covens %v, want [prod web]", h.Name(), s.Covens)
		}
		if st := sh(t, h, "systemctl is-active soulstack-soul; systemctl is-enabled soulstack-soul"); st != "active\nenabled" {
			t.Fatalf("soulstack-soul on %s after bootstrap: %q\n%s", h.Name(), st, journal(h))
		}
	}
}

// serveAgent serves an ssh-agent holding key on a unix socket at path
// until the test ends, and returns path.
func serveAgent(t *testing.T, key ed25519.PrivateKey, path string) string {
	t.Helper()
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = agent.ServeAgent(keyring, c)
			}()
		}
	}()
	return path
}

// testBootstrapSudo bootstraps a SysV host over SSH as a non-root user with
// passwordless sudo (--sudo, --identity, --known-hosts): install.sh runs
// through sudo -n, installs the init script and the soul connects.
func testBootstrapSudo(t *testing.T, e *env, h *lab.Host) {
	sh(t, h, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server sudo curl >/dev/null")
	sh(t, h, "/etc/init.d/ssh status >/dev/null || /etc/init.d/ssh start >/dev/null")
	sh(t, h, "useradd -m -s /bin/sh admin && install -d -m 700 -o admin -g admin /home/admin/.ssh && echo 'admin ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/admin && chmod 0440 /etc/sudoers.d/admin")
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "soulstack test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	identity := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(identity, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteFile("/home/admin/.ssh/authorized_keys", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	sh(t, h, "chown admin:admin /home/admin/.ssh/authorized_keys")
	f := strings.Fields(sh(t, h, "cat /etc/ssh/ssh_host_ed25519_key.pub"))
	if len(f) < 2 {
		t.Fatalf("host key %q", f)
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(h.IP()+" "+f[0]+" "+f[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "soulctl"), "--keeper", e.url, "--token", e.token, "--fingerprint", e.fpr,
		"souls", "bootstrap", "--ssh", "admin@"+h.IP(), "--sudo", "--identity", identity, "--known-hosts", knownHosts, "--covens", "sysv")
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if want := "admin@" + h.IP() + ":22: connected (sid " + h.Name() + ")"; err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("soulctl souls bootstrap --sudo: %v, want %q:\n%s", err, want, out)
	}
	s := e.waitStatus(t, h.Name(), store.SoulConnected)
	if !slices.Equal(s.Covens, []string{"sysv"}) {
		t.Errorf("covens %v, want [sysv]", s.Covens)
	}
	if got := sh(t, h, "stat -c '%U %a' /usr/local/bin/soul /etc/soulstack/soul.env; test -x /etc/init.d/soulstack-soul && echo init"); got != "root 755\nroot 600\ninit" {
		t.Errorf("installed through sudo: %q", got)
	}
}
