package cloud

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// LocalHosts creates and deletes the hosts of local providers: lab-style
// systemd hosts on this machine (internal/lab), one small lab per
// instance, booted from the root filesystem the profile names. One
// LocalHosts serves a Keeper; the labs it made are closed through it,
// others (made by an earlier Keeper process) are attached from their
// state files.
type LocalHosts struct {
	// Dir holds the providers' hosts unless a provider's config names one.
	Dir string

	mu   sync.Mutex
	labs map[string]*lab.Lab
}

// Driver returns the driver of local provider p.
func (lh *LocalHosts) Driver(p store.CloudProvider) (Driver, error) {
	cfg, err := ParseLocal(p.Config)
	if err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		dir = filepath.Join(lh.Dir, p.Name)
	}
	return localDriver{hosts: lh, provider: p.Name, dir: dir}, nil
}

type localDriver struct {
	hosts    *LocalHosts
	provider string
	dir      string
}

// labName is the machine-wide name of an instance's lab (at most 24
// characters, as the lab wants).
func labName(provider, name string) string {
	h := fnv.New32a()
	h.Write([]byte(provider + "/" + name))
	return fmt.Sprintf("cloud-%08x", h.Sum32())
}

func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("the local cloud provider creates systemd hosts with namespaces, mounts and a bridge on this machine: the Keeper must run as root")
	}
	return nil
}

// Create boots one host per name from the profile's rootfs and runs the
// bootstrap's install inside it, reaching the Keeper at the lab's bridge
// address.
func (d localDriver) Create(ctx context.Context, req Request) ([]Instance, error) {
	if err := needRoot(); err != nil {
		return nil, err
	}
	spec, err := ParseLocalSpec(req.Profile.Spec)
	if err != nil {
		return nil, err
	}
	if req.Bootstrap == nil {
		return nil, errors.New("local provider: create without a bootstrap")
	}
	var out []Instance
	for _, n := range req.Names {
		l, err := lab.New(ctx, lab.Config{
			Name: labName(d.provider, n), Hosts: 1, HostNames: []string{n}, Base: spec.Rootfs,
			Dir: filepath.Join(d.dir, n), Flavour: lab.FlavourSystemd,
		})
		if err != nil {
			return out, fmt.Errorf("booting host %s: %w", n, err)
		}
		d.hosts.keep(l)
		h := l.Hosts()[0]
		keeperURL, err := viaGateway(req.Bootstrap.KeeperURL, l.GatewayIP())
		if err != nil {
			return out, err
		}
		// The token goes in a 0600 file, not in the script: the script is
		// sh -c's argument, which every process list shows. It is written
		// from inside the host (on stdin), because a systemd host's /run
		// is a tmpfs of its own that hides the directory under its root.
		if err := writeSecretIn(ctx, h, JoinTokenPath, req.Bootstrap.JoinToken+"\n"); err != nil {
			return out, fmt.Errorf("the bootstrap on %s: writing its join token: %w", n, err)
		}
		script := InstallScript(keeperURL, req.Bootstrap.TLSPin)
		if stdout, stderr, err := h.Exec(ctx, "set -e\n"+script+"\n"); err != nil {
			return out, fmt.Errorf("the bootstrap on %s failed: %v: %s", n, err, abbrev(strings.TrimSpace(stderr+"\n"+stdout), 800))
		}
		out = append(out, Instance{Name: n, ID: l.Name(), Address: h.IP()})
	}
	return out, nil
}

// viaGateway is keeperURL with its host replaced by the lab's bridge
// address (the Keeper listens on every address).
func viaGateway(keeperURL, gateway string) (string, error) {
	u, err := url.Parse(keeperURL)
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("local provider: keeper URL %q has no port", keeperURL)
	}
	u.Host = net.JoinHostPort(gateway, u.Port())
	return u.String(), nil
}

// Delete closes the named hosts' labs (killing every process, unmounting,
// removing their files and network).
func (d localDriver) Delete(ctx context.Context, req Request) error {
	if err := needRoot(); err != nil {
		return err
	}
	var errs []error
	for _, n := range req.Names {
		l := d.hosts.take(labName(d.provider, n))
		if l == nil {
			var err error
			if l, err = lab.Attach(labName(d.provider, n)); err != nil {
				continue // not running: absent already
			}
		}
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// List reports the named hosts that run.
func (d localDriver) List(ctx context.Context, req Request) ([]Instance, error) {
	var out []Instance
	for _, n := range req.Names {
		l := d.hosts.get(labName(d.provider, n))
		if l == nil {
			var err error
			if l, err = lab.Attach(labName(d.provider, n)); err != nil {
				continue
			}
		}
		if hs := l.Hosts(); len(hs) == 1 {
			out = append(out, Instance{Name: n, ID: l.Name(), Address: hs[0].IP()})
		}
	}
	return out, nil
}

func (lh *LocalHosts) keep(l *lab.Lab) {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	if lh.labs == nil {
		lh.labs = map[string]*lab.Lab{}
	}
	lh.labs[l.Name()] = l
}

func (lh *LocalHosts) get(name string) *lab.Lab {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	return lh.labs[name]
}

func (lh *LocalHosts) take(name string) *lab.Lab {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	l := lh.labs[name]
	delete(lh.labs, name)
	return l
}

// writeSecretIn writes data to path inside host h, mode 0600, passing it
// on the shell's standard input so it is on no command line.
func writeSecretIn(ctx context.Context, h *lab.Host, path, data string) error {
	cmd, err := h.Command(ctx, "/bin/sh", "-c", "umask 077 && cat > "+shellQuote(path)+" && chmod 0600 "+shellQuote(path))
	if err != nil {
		return err
	}
	cmd.Stdin = strings.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
