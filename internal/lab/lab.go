package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Lab is a set of hosts on a private bridge. Its methods are safe for
// concurrent use.
type Lab struct {
	cfg    Config
	names  names
	base   string
	repo   string
	subnet netip.Prefix
	hosts  []*Host
	stats  Stats
	lock   *os.File // the lab name's lock; nil for an attached lab

	stateMu   sync.Mutex  // serializes updates of the state file
	closing   atomic.Bool // set when Close starts: no more reboots
	closeOnce sync.Once
	closeErr  error
}

// Stats says how long building a lab took.
type Stats struct {
	// Base is the time taken to find or build the base root file system;
	// BaseBuilt tells whether it was built.
	Base      time.Duration
	BaseBuilt bool
	// Repo is the time taken to find or build the package repository;
	// RepoBuilt tells whether it was built.
	Repo      time.Duration
	RepoBuilt bool
	// Hosts is the time taken to create the bridge and start every host.
	Hosts time.Duration
}

// New builds a lab: the cached base and repository first if they are
// missing, after removing the leftovers of an earlier lab of the same name;
// then the bridge and the hosts, all booted. It needs root. A lab name in
// use by a live Lab (in any process) is an error.
func New(ctx context.Context, cfg Config) (_ *Lab, err error) {
	cfg, err = cfg.normalize()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("lab %s: needs root (network namespaces, mounts)", cfg.Name)
	}
	if err := requireTools(hostTools); err != nil {
		return nil, fmt.Errorf("lab %s: %w", cfg.Name, err)
	}
	n := namesFor(cfg.Name)
	lock, err := lockFile(ctx, n.lockPath(), false)
	if err != nil {
		return nil, fmt.Errorf("lab %s is in use: %w", cfg.Name, err)
	}
	l := &Lab{cfg: cfg, names: n, lock: lock}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close())
		}
	}()
	if err := cleanupLocked(ctx, n, cfg.Dir); err != nil {
		return nil, fmt.Errorf("lab %s: removing leftovers: %w", cfg.Name, err)
	}
	if err := l.buildCaches(ctx); err != nil {
		return nil, fmt.Errorf("lab %s: %w", cfg.Name, err)
	}
	start := time.Now()
	if err := l.createHosts(ctx); err != nil {
		return nil, fmt.Errorf("lab %s: %w", cfg.Name, err)
	}
	l.stats.Hosts = time.Since(start)
	return l, nil
}

// buildCaches finds or builds the base and the repository, under the cache
// lock so that concurrent labs build them once.
func (l *Lab) buildCaches(ctx context.Context) error {
	if l.cfg.Base != "" {
		l.base = l.cfg.Base
		l.repo = filepath.Join(l.cfg.Dir, "hosts", ".empty-repo")
		return os.MkdirAll(l.repo, 0o755)
	}
	cache := l.cfg.CacheDir
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	lock, err := lockFile(ctx, filepath.Join(cache, ".lock"), true)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := removeStaleTemps(cache); err != nil {
		return fmt.Errorf("cache: removing temporary directories: %w", err)
	}
	// The machine's apt sources only matter when something is built.
	srcs := sourcesFunc(func() (aptSource, []aptSource, error) {
		all, err := readAptSources("/etc/apt")
		if err != nil {
			return aptSource{}, nil, err
		}
		return debianSources(all, os.Getenv(EnvMirror))
	})
	start := time.Now()
	l.base, l.stats.BaseBuilt, err = ensureBase(ctx, cache, l.cfg.Flavour, srcs)
	if err != nil {
		return err
	}
	l.stats.Base = time.Since(start)
	start = time.Now()
	l.repo, l.stats.RepoBuilt, err = ensureRepo(ctx, cache, l.base, srcs, l.cfg.Packages)
	l.stats.Repo = time.Since(start)
	return err
}

// createHosts records the lab's state, then creates the bridge and the
// hosts.
func (l *Lab) createHosts(ctx context.Context) error {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	st := &labState{Name: l.cfg.Name, Dir: l.cfg.Dir, Base: l.base, Repo: l.repo, Bridge: l.names.bridge(), Flavour: l.cfg.Flavour}
	for i := 1; i <= l.cfg.Hosts; i++ {
		st.Hosts = append(st.Hosts, hostState{Name: l.hostName(i), NetNS: l.names.netns(i), Veth: l.names.veth(i)})
	}
	if err := writeState(l.names, st); err != nil {
		return err
	}
	netLock, err := lockFile(ctx, filepath.Join(runDir, ".net.lock"), true)
	if err != nil {
		return err
	}
	l.subnet, err = allocSubnet(l.cfg.Name)
	if err == nil {
		st.Subnet = l.subnet.String()
		err = writeState(l.names, st)
	}
	if err == nil {
		err = setupBridge(ctx, l.names.bridge(), l.subnet)
	}
	netLock.Close()
	if err != nil {
		return err
	}
	for i := 1; i <= l.cfg.Hosts; i++ {
		name := l.hostName(i)
		l.hosts = append(l.hosts, newHost(l, i, name, hostAddr(l.subnet, i).String(),
			l.names.netns(i), l.names.veth(i), filepath.Join(l.cfg.Dir, "hosts", name)))
		st.Hosts[i-1].IP = l.hosts[i-1].ip
	}
	for i, h := range l.hosts {
		if err := h.mountRoot(); err != nil {
			return err
		}
		if l.cfg.Base != "" {
			// The repository's mount point, which a foreign rootfs lacks.
			if err := os.MkdirAll(filepath.Join(h.RootDir(), "srv", "lab-repo"), 0o755); err != nil {
				return err
			}
		}
		if err := h.writeIdentity(); err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
		if err := setupHostNet(ctx, h, l.names.bridge(), l.subnet); err != nil {
			return err
		}
		if err := h.boot(ctx); err != nil {
			return err
		}
		st.Hosts[i].InitPID = h.InitPID()
		if err := writeState(l.names, st); err != nil {
			return err
		}
	}
	return nil
}

// hostName names host i (1-based).
func (l *Lab) hostName(i int) string {
	if l.cfg.HostNames != nil {
		return l.cfg.HostNames[i-1]
	}
	return l.names.hostname(i)
}

// recordInit records the PID of a host's init in the state file, for
// Attach and Cleanup.
func (l *Lab) recordInit(h *Host, pid int) error {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	st, err := readState(l.names)
	if err != nil {
		return err
	}
	if h.index-1 < len(st.Hosts) {
		st.Hosts[h.index-1].InitPID = pid
	}
	return writeState(l.names, st)
}

// Name returns the lab's name.
func (l *Lab) Name() string { return l.cfg.Name }

// Flavour returns the hosts' flavour: FlavourSystemd or FlavourSysV.
func (l *Lab) Flavour() string { return l.cfg.Flavour }

// Hosts returns the lab's hosts, lab-host-1 first.
func (l *Lab) Hosts() []*Host { return slices.Clone(l.hosts) }

// Host returns the host with the given name, or nil.
func (l *Lab) Host(name string) *Host {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// GatewayIP returns the bridge's address on the machine (.1), the address
// a Keeper listens on for the hosts to reach it.
func (l *Lab) GatewayIP() string { return gatewayAddr(l.subnet).String() }

// Subnet returns the lab's IPv4 subnet in CIDR notation.
func (l *Lab) Subnet() string { return l.subnet.String() }

// Bridge returns the name of the lab's bridge.
func (l *Lab) Bridge() string { return l.names.bridge() }

// Dir returns the directory holding the hosts' file systems.
func (l *Lab) Dir() string { return l.cfg.Dir }

// RepoDir returns the local apt repository on the machine; hosts see it
// read-only at /srv/lab-repo.
func (l *Lab) RepoDir() string { return l.repo }

// BaseDir returns the cached base root file system, the hosts' lower layer.
func (l *Lab) BaseDir() string { return l.base }

// Stats says how long building the lab took.
func (l *Lab) Stats() Stats { return l.stats }

// Close kills every process of every host (by namespace, never by name),
// unmounts and removes the hosts' file systems, and deletes the network
// namespaces, veths, bridge and routing rule. Closing twice does nothing.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		l.closing.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var errs []error
		if l.lock == nil {
			// An attached lab: another process may have taken the name.
			lock, err := lockFile(ctx, l.names.lockPath(), false)
			if err != nil {
				l.closeErr = fmt.Errorf("closing lab %s: %w", l.cfg.Name, err)
				return
			}
			l.lock = lock
		}
		for _, h := range l.hosts {
			errs = append(errs, h.KillAll(ctx))
		}
		errs = append(errs, cleanupLocked(ctx, l.names, l.cfg.Dir), l.lock.Close())
		if err := errors.Join(errs...); err != nil {
			l.closeErr = fmt.Errorf("closing lab %s: %w", l.cfg.Name, err)
		}
	})
	return l.closeErr
}
