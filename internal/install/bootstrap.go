package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Target is one host to bootstrap: user@host[:port].
type Target struct {
	User, Host string
	Port       int
}

// String is user@host:port.
func (t Target) String() string {
	return t.User + "@" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// ParseTarget reads user@host[:port] (user defaults to root, port to 22;
// an IPv6 host is written [::1]:22).
func ParseTarget(s string) (Target, error) {
	t := Target{User: "root", Port: 22}
	hostport := s
	if u, h, ok := strings.Cut(s, "@"); ok {
		if u == "" {
			return Target{}, fmt.Errorf("ssh target %q: empty user", s)
		}
		t.User, hostport = u, h
	}
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("ssh target %q: bad port %q", s, p)
		}
		t.Host, t.Port = h, n
	} else {
		t.Host = strings.Trim(hostport, "[]")
	}
	if t.Host == "" {
		return Target{}, fmt.Errorf("ssh target %q: no host", s)
	}
	return t, nil
}

// SSHOptions says how bootstrap reaches hosts.
type SSHOptions struct {
	// IdentityFile is a private key (unencrypted); "" uses the SSH agent
	// ($SSH_AUTH_SOCK).
	IdentityFile string
	// KnownHosts is the known_hosts file host keys are checked against.
	KnownHosts string
	// AcceptNewHostKeys records the key of a host known_hosts does not
	// list yet (never a host whose key changed).
	AcceptNewHostKeys bool
	// Sudo runs the installer through sudo -n (for a non-root user).
	Sudo bool
	// Timeout bounds connecting and authenticating; 0 means 15 s.
	Timeout time.Duration
}

// BootstrapOptions says what bootstrap installs.
type BootstrapOptions struct {
	SSH SSHOptions
	// Script is the Keeper's install.sh.
	Script []byte
	// JoinToken is handed to the installer on its standard input (never
	// on a command line, which other users of the host can read).
	JoinToken string
	// InstallArgs are more install.sh options (--keeper URL, --root DIR).
	InstallArgs []string
	// Reinstall replaces an installed soul; without it such a host is
	// skipped.
	Reinstall bool
	// Parallel bounds the hosts worked on at once; 0 means 10.
	Parallel int
}

// Host outcomes.
const (
	HostInstalled = "installed"
	HostSkipped   = "skipped"
	HostFailed    = "failed"
)

// HostResult is the outcome of one host.
type HostResult struct {
	Target string `json:"target"`
	Status string `json:"status"`
	// Hostname is what the host calls itself (hostname -f): the SID its
	// soul takes by default.
	Hostname string `json:"hostname,omitempty"`
	// Message says why a host failed or was skipped, or what the
	// installer said last.
	Message string `json:"message,omitempty"`
}

// Bootstrap installs a soul on every target over SSH, at most Parallel at
// once, and returns one result per target in their order.
func Bootstrap(ctx context.Context, targets []Target, o BootstrapOptions) []HostResult {
	if o.Parallel <= 0 {
		o.Parallel = 10
	}
	if o.SSH.Timeout <= 0 {
		o.SSH.Timeout = 15 * time.Second
	}
	res := make([]HostResult, len(targets))
	auth, authErr := authMethods(o.SSH)
	hk, hkErr := newHostKeys(o.SSH)
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, t := range targets {
		res[i] = HostResult{Target: t.String()}
		if err := errors.Join(authErr, hkErr); err != nil {
			res[i].Status, res[i].Message = HostFailed, err.Error()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res[i].Status, res[i].Message = HostFailed, ctx.Err().Error()
				return
			}
			defer func() { <-sem }()
			bootstrapOne(ctx, t, o, auth, hk, &res[i])
		}()
	}
	wg.Wait()
	return res
}

func bootstrapOne(ctx context.Context, t Target, o BootstrapOptions, auth []ssh.AuthMethod, hk *hostKeys, r *HostResult) {
	fail := func(format string, args ...any) {
		r.Status, r.Message = HostFailed, fmt.Sprintf(format, args...)
	}
	addr := net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	cfg := &ssh.ClientConfig{
		User: t.User, Auth: auth, Timeout: o.SSH.Timeout,
		HostKeyCallback:   hk.callback,
		HostKeyAlgorithms: hk.algorithms(addr),
	}
	d := net.Dialer{Timeout: o.SSH.Timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		fail("connecting: %v", err)
		return
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		fail("ssh: %v", err)
		return
	}
	client := ssh.NewClient(sc, chans, reqs)
	defer client.Close()
	stop := context.AfterFunc(ctx, func() { client.Close() })
	defer stop()

	sudo := ""
	if o.SSH.Sudo {
		sudo = "sudo -n "
	}
	out, err := runSSH(client, "hostname -f 2>/dev/null || hostname", nil)
	if err != nil {
		fail("running hostname: %v", err)
		return
	}
	r.Hostname = strings.TrimSpace(out)
	if !o.Reinstall {
		root := "/"
		for i, a := range o.InstallArgs {
			if a == "--root" && i+1 < len(o.InstallArgs) {
				root = o.InstallArgs[i+1] + "/"
			}
		}
		check := fmt.Sprintf("for f in %[1]susr/local/bin/soul %[1]susr/bin/soul %[1]setc/soulstack/soul.env; do [ -e \"$f\" ] && echo \"$f\"; done; true", shellQuote(root))
		if out, err := runSSH(client, check, nil); err != nil {
			fail("checking for a soul: %v", err)
			return
		} else if f := strings.TrimSpace(out); f != "" {
			r.Status, r.Message = HostSkipped, "a soul is already installed ("+strings.Fields(f)[0]+"): pass --reinstall to replace it"
			return
		}
	}
	args := append([]string(nil), o.InstallArgs...)
	if o.Reinstall {
		args = append(args, "--reinstall")
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	// The token travels on stdin, ahead of the script: sh reads it as the
	// script's first line.
	var stdin bytes.Buffer
	fmt.Fprintf(&stdin, "SOUL_JOIN_TOKEN=%s; export SOUL_JOIN_TOKEN\n", shellQuote(o.JoinToken))
	stdin.Write(o.Script)
	out, err = runSSH(client, sudo+"sh -s -- "+strings.Join(quoted, " "), &stdin)
	if err != nil {
		fail("installing: %s", lastLine(out, err.Error()+" (no output)"))
		return
	}
	r.Status, r.Message = HostInstalled, lastLine(out, "")
}

// runSSH runs cmd in a new session and returns its combined output; a
// non-zero exit is an error.
func runSSH(c *ssh.Client, cmd string, stdin *bytes.Buffer) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	if stdin != nil {
		s.Stdin = stdin
	}
	// CombinedOutput serializes the two streams' writes: x/crypto/ssh copies
	// stdout and stderr from two goroutines, so one shared bytes.Buffer as
	// both would race (and lose output).
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}

// lastLine is the last non-empty line of out, else def.
func lastLine(out, def string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return def
}

func authMethods(o SSHOptions) ([]ssh.AuthMethod, error) {
	if o.IdentityFile != "" {
		b, err := os.ReadFile(o.IdentityFile)
		if err != nil {
			return nil, fmt.Errorf("reading --identity: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(b)
		if err != nil {
			var pe *ssh.PassphraseMissingError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("--identity %s is passphrase-protected: load it into ssh-agent and leave --identity out", o.IdentityFile)
			}
			return nil, fmt.Errorf("parsing --identity %s: %w", o.IdentityFile, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, errors.New("no SSH credentials: pass --identity KEYFILE or run an ssh-agent ($SSH_AUTH_SOCK)")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("reaching the ssh-agent: %w", err)
	}
	return []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(conn).Signers)}, nil
}

// hostKeys checks host keys against a known_hosts file, recording new
// ones when allowed.
type hostKeys struct {
	path   string
	accept bool
	mu     sync.Mutex
	db     *knownhosts.HostKeyDB
}

func newHostKeys(o SSHOptions) (*hostKeys, error) {
	path := o.KnownHosts
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("finding known_hosts: %w", err)
		}
		path = filepath.Join(home, ".ssh", "known_hosts")
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if !o.AcceptNewHostKeys {
			return nil, fmt.Errorf("no known_hosts file %s: add the hosts' keys (ssh-keyscan) or pass --accept-new-host-keys", path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			return nil, err
		}
	}
	db, err := knownhosts.NewDB(path)
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts %s: %w", path, err)
	}
	return &hostKeys{path: path, accept: o.AcceptNewHostKeys, db: db}, nil
}

func (h *hostKeys) algorithms(addr string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.db.HostKeyAlgorithms(addr)
}

func (h *hostKeys) callback(hostname string, remote net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.db.HostKeyCallback()(hostname, remote, key)
	switch {
	case err == nil:
		return nil
	case knownhosts.IsHostKeyChanged(err):
		return fmt.Errorf("the host key of %s does not match %s: refusing to connect (if the host was reinstalled, check its new key and remove the old line)", hostname, h.path)
	case knownhosts.IsHostUnknown(err) && h.accept:
		f, ferr := os.OpenFile(h.path, os.O_APPEND|os.O_WRONLY, 0o600)
		if ferr != nil {
			return fmt.Errorf("recording the host key of %s: %w", hostname, ferr)
		}
		werr := knownhosts.WriteKnownHost(f, hostname, remote, key)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("recording the host key of %s: %w", hostname, werr)
		}
		db, rerr := knownhosts.NewDB(h.path)
		if rerr == nil {
			h.db = db
		}
		return nil
	case knownhosts.IsHostUnknown(err):
		return fmt.Errorf("the host key of %s is not in %s: add it (ssh-keyscan, after checking it) or pass --accept-new-host-keys", hostname, h.path)
	default:
		return err
	}
}
