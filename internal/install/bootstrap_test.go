package install_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/testutil"
)

// sshd is a real OpenSSH server on a loopback port, accepting one key for
// root.
type sshd struct {
	port     int
	keyFile  string // the client's private key
	hostPub  string // the server's public host key line
	knownOld string // a known_hosts line with another key for the same host
}

func startSSHD(t *testing.T) *sshd {
	t.Helper()
	if os.Getuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("needs root to run sshd (CI runs it)")
	}
	bin, err := exec.LookPath("sshd")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/sshd"); err != nil {
			t.Fatal("sshd is needed (scripts/test-deps.sh installs openssh-server)")
		}
	}
	dir := t.TempDir()
	run(t, "", "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "hostkey"))
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshd{keyFile: filepath.Join(dir, "id_ed25519")}
	if err := os.WriteFile(s.keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := strings.Join([]string{
		"Port " + strconv.Itoa(s.port), "ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(dir, "hostkey"), "PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"UsePAM no", "StrictModes no", "",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.StartProcess(t, "sshd", bin, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	testutil.WaitFor(t, 10*time.Second, func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "sshd listening")
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, _ := ssh.NewPublicKey(other)
	s.knownOld = "[127.0.0.1]:" + strconv.Itoa(s.port) + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(otherPub))) + "\n"
	return s
}

// soulctl souls bootstrap over a real sshd: an unknown host key is refused
// unless --accept-new-host-keys (which records it), the installation puts
// the Keeper's soul and a one-use join token on the host, a host with a
// soul is skipped without --reinstall and replaced with it, and a changed
// host key is refused.
func TestBootstrapOverSSH(t *testing.T) {
	s := startSSHD(t)
	soulDir := t.TempDir()
	b, err := os.ReadFile(bins["soul"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(soulDir, "soul-linux-"+runtime.GOARCH), b, 0o755); err != nil {
		t.Fatal(err)
	}
	k := startKeeper(t, soulDir)
	home := t.TempDir()
	known := filepath.Join(home, "known_hosts")
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	target := "root@127.0.0.1:" + strconv.Itoa(s.port)
	soulctl := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		g := &cli.Globals{Getenv: func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}}
		base := []string{"--keeper", k.url, "--token", k.token, "--fingerprint", k.fingerprint,
			"souls", "bootstrap", "--ssh", target, "--identity", s.keyFile, "--known-hosts", known, "--root", root, "--covens", "web"}
		code := g.Run(context.Background(), append(base, args...), &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := soulctl()
	if code != 1 || !strings.Contains(out, target+": failed: ") || !strings.Contains(out, "is not in "+known) {
		t.Fatalf("unknown host key: exit %d\n%s%s", code, out, errs)
	}
	assertEmptyTree(t, root)
	// The failed bootstrap leaves no usable join token behind.
	if tokens, err := k.client.ListJoinTokens(context.Background()); err != nil || len(tokens) != 1 || tokens[0].RevokedAt == nil {
		t.Fatalf("join tokens after a failed bootstrap: %+v (%v), want its token revoked", tokens, err)
	}

	code, out, errs = soulctl("--accept-new-host-keys")
	if code != 0 || !strings.Contains(out, target+": installed") {
		t.Fatalf("bootstrap: exit %d\n%s%s", code, out, errs)
	}
	if kh := readFile(t, known); !strings.Contains(kh, "[127.0.0.1]:"+strconv.Itoa(s.port)+" ssh-ed25519 ") {
		t.Fatalf("known_hosts after accepting:\n%s", kh)
	}
	got, err := os.ReadFile(filepath.Join(root, "usr/local/bin/soul"))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("the soul on the host is not the keeper's (%v)", err)
	}
	env := readFile(t, filepath.Join(root, "etc/soulstack/soul.env"))
	if !strings.Contains(env, "SOULSTACK_KEEPER="+k.url+"\n") || !strings.Contains(env, "SOUL_JOIN_TOKEN=") {
		t.Fatalf("soul.env:\n%s", env)
	}
	tokens, err := k.client.ListJoinTokens(context.Background())
	if err != nil || len(tokens) != 2 {
		t.Fatalf("join tokens: %+v (%v)", tokens, err)
	}
	for _, jt := range tokens {
		if jt.MaxUses != 1 || !strings.Contains(env, "SOUL_JOIN_TOKEN=") {
			t.Fatalf("join token %+v: want one use per host", jt)
		}
	}

	code, out, errs = soulctl()
	if code != 0 || !strings.Contains(out, target+": skipped") || !strings.Contains(out, "--reinstall") {
		t.Fatalf("second bootstrap: exit %d\n%s%s", code, out, errs)
	}

	// --reinstall replaces the soul: a new one-use token in soul.env.
	code, out, errs = soulctl("--reinstall")
	if code != 0 || !strings.Contains(out, target+": installed") {
		t.Fatalf("bootstrap --reinstall: exit %d\n%s%s", code, out, errs)
	}
	if env2 := readFile(t, filepath.Join(root, "etc/soulstack/soul.env")); env2 == env || !strings.Contains(env2, "SOUL_JOIN_TOKEN=SSJ") {
		t.Fatalf("soul.env after --reinstall (want a new token):\n%s", env2)
	}

	if err := os.WriteFile(known, []byte(s.knownOld), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = soulctl("--accept-new-host-keys", "--reinstall")
	if code != 1 || !strings.Contains(out, "does not match") {
		t.Fatalf("changed host key: exit %d\n%s%s", code, out, errs)
	}
}
