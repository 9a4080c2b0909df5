package core

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// sshOptions are the ssh-related params of core.git.
type sshOptions struct {
	keyFile     string
	knownHosts  string // extra known_hosts file (ssh_opts UserKnownHostsFile)
	acceptNew   bool   // accept_hostkey / accept_newhostkey
	defaultUser string
}

// defaultIdentities are the keys ssh tries when no key_file is given.
var defaultIdentities = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// sshAuth builds the ssh credentials and host key check of one call:
// the key_file (or ~/.ssh's default identities, and the agent when
// SSH_AUTH_SOCK is set), and known_hosts checked against ~/.ssh/known_hosts
// and /etc/ssh/ssh_known_hosts. An unknown host is refused unless
// acceptNew, which records its key in ~/.ssh/known_hosts (only outside
// check mode); a host whose key differs from the recorded one is always
// refused.
func sshAuth(env *module.Env, o sshOptions) (*gitssh.PublicKeysCallback, error) {
	var signers []ssh.Signer
	if o.keyFile != "" {
		b, err := readHostFile(env, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("param \"key_file\": %w", err)
		}
		if b == nil {
			return nil, fmt.Errorf("param \"key_file\": %s does not exist", o.keyFile)
		}
		s, err := ssh.ParsePrivateKey(b)
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			return nil, fmt.Errorf("param \"key_file\": %s is protected by a passphrase, which core.git does not take; use a key without one or an ssh agent", o.keyFile)
		}
		if err != nil {
			return nil, fmt.Errorf("param \"key_file\": %s is not a private key: %w", o.keyFile, err)
		}
		signers = append(signers, s)
	} else {
		for _, name := range defaultIdentities {
			b, err := readHostFile(env, filepath.Join(sshDir(), name))
			if err != nil || b == nil {
				continue
			}
			if s, err := ssh.ParsePrivateKey(b); err == nil {
				signers = append(signers, s)
			}
		}
	}
	var ag agent.ExtendedAgent
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && o.keyFile == "" {
		if c, err := net.Dial("unix", sock); err == nil {
			ag = agent.NewClient(c)
		}
	}
	hk, err := hostKeyCallback(env, o)
	if err != nil {
		return nil, err
	}
	return &gitssh.PublicKeysCallback{
		User: o.defaultUser,
		Callback: func() ([]ssh.Signer, error) {
			out := append([]ssh.Signer(nil), signers...)
			if ag != nil {
				if more, err := ag.Signers(); err == nil {
					out = append(out, more...)
				}
			}
			return out, nil
		},
		HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: hk},
	}, nil
}

// hostKeyCallback checks host keys against the known_hosts files.
func hostKeyCallback(env *module.Env, o sshOptions) (ssh.HostKeyCallback, error) {
	userFile := filepath.Join(sshDir(), "known_hosts")
	files := []string{userFile, "/etc/ssh/ssh_known_hosts"}
	if o.knownHosts != "" {
		// As OpenSSH's UserKnownHostsFile: instead of ~/.ssh/known_hosts.
		userFile = o.knownHosts
		files[0] = userFile
	}
	var paths []string
	for _, f := range files {
		hp, err := fsOf(env).HostPath(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("known hosts file %s: %w", f, err)
		}
		if st, err := os.Stat(hp); err == nil && st.Mode().IsRegular() {
			paths = append(paths, hp)
		}
	}
	check, err := knownhosts.New(paths...)
	if err != nil {
		return nil, fmt.Errorf("reading known hosts %v: %w", paths, err)
	}
	var mu sync.Mutex
	accepted := map[string]string{} // host → key, accepted during this call
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := check(host, remote, key)
		var ke *knownhosts.KeyError
		if err == nil || !errors.As(err, &ke) {
			return err
		}
		if len(ke.Want) > 0 {
			return fmt.Errorf("the ssh host key of %s (%s %s) differs from the one in known_hosts (%s:%d): refusing to connect, the host may be impersonated; fix known_hosts if the key really changed",
				host, key.Type(), ssh.FingerprintSHA256(key), ke.Want[0].Filename, ke.Want[0].Line)
		}
		if !o.acceptNew {
			return fmt.Errorf("the ssh host key of %s (%s %s) is not known: add it to %s or /etc/ssh/ssh_known_hosts, or set accept_hostkey: true",
				host, key.Type(), ssh.FingerprintSHA256(key), userFile)
		}
		mu.Lock()
		defer mu.Unlock()
		line := knownhosts.Line([]string{knownhosts.Normalize(host)}, key)
		if accepted[host] == line {
			return nil
		}
		accepted[host] = line
		if env.Check {
			return nil
		}
		return appendKnownHost(env, userFile, line)
	}, nil
}

// appendKnownHost adds line to the known_hosts file, creating it (0600)
// and its directory (0700) when missing.
func appendKnownHost(env *module.Env, file, line string) error {
	dir := filepath.Dir(file)
	d, err := fsOf(env).Open(dir, safefs.Options{Follow: true, MakeDirs: true})
	if err != nil {
		return fmt.Errorf("recording the host key in %s: %w", file, err)
	}
	_, ok, err := d.Lstat()
	if err == nil && !ok {
		m := fs.FileMode(0o700)
		err = d.Mkdir(safefs.Attrs{UID: -1, GID: -1, Mode: &m})
	}
	d.Close()
	if err != nil {
		return fmt.Errorf("recording the host key in %s: %w", file, err)
	}
	t, err := fsOf(env).Open(file, safefs.Options{})
	if err != nil {
		return fmt.Errorf("recording the host key in %s: %w", file, err)
	}
	defer t.Close()
	var old []byte
	mode := fs.FileMode(0o600)
	uid, gid := -1, -1
	if info, ok, err := t.Lstat(); err != nil {
		return fmt.Errorf("recording the host key in %s: %w", file, err)
	} else if ok {
		if old, err = t.ReadFile(16 << 20); err != nil {
			return fmt.Errorf("recording the host key in %s: %w", file, err)
		}
		mode, uid, gid = info.Mode.Perm(), info.UID, info.GID
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	if err := t.WriteFile(append(old, line+"\n"...), mode, uid, gid); err != nil {
		return fmt.Errorf("recording the host key in %s: %w", file, err)
	}
	return nil
}
