package install

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// testBootstrap proves `soulctl souls bootstrap --ssh` on a fresh systemd
// host that runs only sshd (and has curl, which install.sh needs): the real
// soulctl connects with a test key, checks the host key against a
// known_hosts file, runs the Keeper's install.sh, and the soul connects as
// a systemd unit.
func testBootstrap(t *testing.T, e *env, h *lab.Host) {
	if out, ok := try(h, "command -v soul; ls /etc/systemd/system/soulstack-soul.service"); ok {
		t.Fatalf("host not fresh:\n%s", out)
	}
	sh(t, h, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server curl >/dev/null && systemctl enable -q --now ssh && systemctl is-active ssh")

	// A test key authorized for root, and the host's key in known_hosts.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
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
	spub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, h, "install -d -m 700 /root/.ssh")
	if err := h.WriteFile("/root/.ssh/authorized_keys", ssh.MarshalAuthorizedKey(spub), 0o600); err != nil {
		t.Fatal(err)
	}
	hostKey := sh(t, h, "cat /etc/ssh/ssh_host_ed25519_key.pub")
	f := strings.Fields(hostKey)
	if len(f) < 2 {
		t.Fatalf("host key %q", hostKey)
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(h.IP()+" "+f[0]+" "+f[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins["soulctl"], "--keeper", e.url, "--token", e.token, "--fingerprint", e.fpr,
		"souls", "bootstrap", "--ssh", "root@"+h.IP(), "--identity", identity, "--known-hosts", knownHosts,
		"--covens", "bootstrapped", "--wait", "60s")
	cmd.Env = append(os.Environ(), "HOME="+dir, "SSH_AUTH_SOCK=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("soulctl souls bootstrap: %v\n%s\n%s", err, out, journal(h))
	}
	if want := "root@" + h.IP() + ":22: connected (sid " + h.Name() + ")"; !strings.Contains(string(out), want) {
		t.Errorf("soulctl said %q, want a line %q", out, want)
	}
	s := e.waitStatus(t, h.Name(), store.SoulConnected)
	if len(s.Covens) != 1 || s.Covens[0] != "bootstrapped" {
		t.Errorf("soul covens %v, want [bootstrapped]", s.Covens)
	}
	if st := sh(t, h, "systemctl is-active soulstack-soul; systemctl is-enabled soulstack-soul"); st != "active\nenabled" {
		t.Fatalf("soulstack-soul after bootstrap: %q\n%s", st, journal(h))
	}
}
