package core

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"golang.org/x/crypto/ssh"

	"github.com/soulstack/soulstack/internal/module"
)

// sshGitServer is an ssh server on 127.0.0.1:0 that serves
// git-upload-pack for any repository path with go-git's server, to one
// client key.
type sshGitServer struct {
	ln   net.Listener
	port int
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn []net.Conn
}

func newSigner(t *testing.T) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

// writeKey writes priv as an OpenSSH private key file (0600).
func writeKey(t *testing.T, path string, priv ed25519.PrivateKey) {
	t.Helper()
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
}

func startSSHGitServer(t *testing.T, hostKey ssh.Signer, client ssh.PublicKey) *sshGitServer {
	t.Helper()
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), client.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshGitServer{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conn = append(s.conn, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serveConn(c, cfg)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conn {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *sshGitServer) serveConn(c net.Conn, cfg *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range creqs {
				if req.Type != "exec" {
					_ = req.Reply(false, nil)
					continue
				}
				var cmd struct{ Command string }
				_ = ssh.Unmarshal(req.Payload, &cmd)
				name, arg, _ := strings.Cut(cmd.Command, " ")
				if name != "git-upload-pack" {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				status := uint32(0)
				if err := serveUploadPack(ch, strings.Trim(arg, "'")); err != nil {
					fmt.Fprintln(ch.Stderr(), err)
					status = 1
				}
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
				return
			}
		}()
	}
}

// serveUploadPack answers one git-upload-pack exchange on rw.
func serveUploadPack(rw io.ReadWriter, path string) error {
	ep, err := transport.NewEndpoint("file://" + path)
	if err != nil {
		return err
	}
	sess, err := server.NewServer(localLoader{}).NewUploadPackSession(ep, nil)
	if err != nil {
		return err
	}
	ar, err := sess.AdvertisedReferences()
	if err != nil {
		return err
	}
	if err := ar.Encode(rw); err != nil {
		return err
	}
	req := packp.NewUploadPackRequest()
	if err := req.Decode(rw); err != nil {
		return nil // ls-remote: the client hangs up after the references
	}
	resp, err := sess.UploadPack(context.Background(), req)
	if err != nil {
		return err
	}
	return resp.Encode(rw)
}

// TestGitSSH clones over real ssh from an in-process server: an unknown
// host key is refused unless accept_hostkey (which records it, except in
// check mode), key_file authenticates, a changed host key is refused even
// with accept_hostkey, and ssh_opts' UserKnownHostsFile is honoured.
// Everything lives under a --root, so ~/.ssh is the test's own.
func TestGitSSH(t *testing.T) {
	f := newGitFixture(t)
	hostKey, _ := newSigner(t)
	clientSigner, clientPriv := newSigner(t)
	_, otherPriv := newSigner(t)
	srv := startSSHGitServer(t, hostKey, clientSigner.PublicKey())

	root := t.TempDir()
	env := &module.Env{Root: root}
	writeKey(t, filepath.Join(root, "keys", "id"), clientPriv)
	writeKey(t, filepath.Join(root, "keys", "other"), otherPriv)
	knownHosts := filepath.Join(root, homeDir(), ".ssh", "known_hosts")
	repo := fmt.Sprintf("ssh://git@127.0.0.1:%d%s", srv.port, f.dir)
	p := map[string]any{"repo": repo, "dest": "/co", "key_file": "/keys/id"}

	_, err := runErr(t, "core.git", p, env)
	wantErrContains(t, err, "host key", "not known", "accept_hostkey")
	if _, err := os.Stat(filepath.Join(root, "co")); !os.IsNotExist(err) {
		t.Fatalf("dest exists after a refused connection: %v", err)
	}

	p["accept_hostkey"] = true
	check := run(t, "core.git", p, &module.Env{Root: root, Check: true})
	wantChanged(t, check, true)
	wantGitData(t, check, "", f.c2.String(), false)
	if _, err := os.Stat(knownHosts); !os.IsNotExist(err) {
		t.Fatalf("check mode wrote known_hosts: %v", err)
	}

	res := run(t, "core.git", p, env)
	wantChanged(t, res, true)
	wantGitData(t, res, "", f.c2.String(), false)
	kh := readFile(t, knownHosts)
	if want := fmt.Sprintf("[127.0.0.1]:%d %s", srv.port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostKey.PublicKey())))); strings.TrimSpace(kh) != want {
		t.Fatalf("known_hosts = %q, want %q", kh, want)
	}
	delete(p, "accept_hostkey") // the key is known now
	wantChanged(t, run(t, "core.git", p, env), false)

	p["key_file"] = "/keys/other"
	_, err = runErr(t, "core.git", p, env)
	wantErrContains(t, err, repo[:len("ssh://git@127.0.0.1")])

	// Key file in ~/.ssh is used by default.
	writeKey(t, filepath.Join(root, homeDir(), ".ssh", "id_ed25519"), clientPriv)
	delete(p, "key_file")
	wantChanged(t, run(t, "core.git", p, env), false)

	// A different key recorded for the host: refused, accept_hostkey or not.
	otherHost, _ := newSigner(t)
	line := fmt.Sprintf("[127.0.0.1]:%d %s", srv.port, ssh.MarshalAuthorizedKey(otherHost.PublicKey()))
	if err := os.WriteFile(knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	p["accept_hostkey"] = true
	_, err = runErr(t, "core.git", p, env)
	wantErrContains(t, err, "differs from the one in known_hosts")

	// ssh_opts: another known_hosts file, accept-new.
	res = run(t, "core.git", map[string]any{"repo": repo, "dest": "/co2", "key_file": "/keys/id",
		"ssh_opts": "-o UserKnownHostsFile=/etc/kh -o StrictHostKeyChecking=accept-new"}, env)
	wantChanged(t, res, true)
	if !strings.Contains(readFile(t, filepath.Join(root, "etc", "kh")), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", srv.port)) {
		t.Fatalf("UserKnownHostsFile was not written")
	}
}
