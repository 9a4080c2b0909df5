package lab

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Config describes a lab to build.
type Config struct {
	// Name identifies the lab on this machine: lowercase letters, digits and
	// '-', at most 24 characters. Interface, namespace and state names are
	// derived from it, and New removes the leftovers of an earlier lab of the
	// same name.
	Name string
	// Hosts is the number of hosts, lab-host-1 … lab-host-N (1 to 200).
	Hosts int
	// Dir holds the hosts' overlay directories; it defaults to
	// /var/lib/soulstack-lab/labs/<Name>. Close removes what the lab created
	// in it, and Dir itself when it is then empty.
	Dir string
	// Packages are made installable offline in the hosts, together with the
	// dependencies the base lacks (recommends are not included).
	Packages []string
	// CacheDir holds the base root filesystem, the downloaded packages and
	// the repositories; it defaults to $SOULSTACK_LAB_CACHE or
	// /var/cache/soulstack-lab.
	CacheDir string
	// Base, when set, is a root filesystem directory used read-only as the
	// hosts' lower layer instead of the cached base (the cloud provider kind
	// local boots the rootfs its profile names). No package repository is
	// built for it: Packages must be empty, and the hosts' /srv/lab-repo
	// is an empty directory.
	Base string
	// HostNames, when set, names the hosts (one name per host, DNS labels)
	// instead of lab-host-1 … lab-host-N.
	HostNames []string
	// Flavour is the hosts' init: FlavourSystemd (the default; systemd 252
	// as PID 1, as on real Debian hosts) or FlavourSysV (tini, services run
	// by their /etc/init.d scripts).
	Flavour string
}

// Host flavours (Config.Flavour).
const (
	// FlavourSystemd hosts boot systemd as PID 1 from a base with systemd,
	// systemd-sysv and dbus.
	FlavourSystemd = "systemd"
	// FlavourSysV hosts run tini as PID 1 and start services through their
	// SysV init scripts.
	FlavourSysV = "sysv"
)

// Environment variables that change where the lab keeps things.
const (
	// EnvCache overrides the default cache directory.
	EnvCache = "SOULSTACK_LAB_CACHE"
	// EnvMirror names the Debian archive to use instead of the one found in
	// the machine's apt sources.
	EnvMirror = "SOULSTACK_LAB_MIRROR"
)

const (
	// suite is the Debian release of the base and of the repository.
	suite = "bookworm"
	// maxHosts keeps host addresses (.11 … .210) inside the /24.
	maxHosts = 200
	// runDir holds state files and locks; it is a tmpfs, so a reboot (which
	// also removes every namespace and mount) clears it too.
	runDir = "/run/soulstack-lab"
	// repoInHost is where the local apt repository appears inside a host.
	repoInHost = "/srv/lab-repo"
	// netnsDir is where ip keeps named network namespaces.
	netnsDir = "/run/netns"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// normalize validates cfg and fills in defaults.
func (cfg Config) normalize() (Config, error) {
	if !nameRE.MatchString(cfg.Name) {
		return cfg, fmt.Errorf("lab name %q: want 1-24 lowercase letters, digits or '-', starting with a letter or digit", cfg.Name)
	}
	if cfg.Hosts < 1 || cfg.Hosts > maxHosts {
		return cfg, fmt.Errorf("lab %s: %d hosts: want 1 to %d", cfg.Name, cfg.Hosts, maxHosts)
	}
	if cfg.Dir == "" {
		cfg.Dir = defaultDir(cfg.Name)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return cfg, fmt.Errorf("lab %s: dir: %w", cfg.Name, err)
	}
	cfg.Dir = dir
	if cfg.CacheDir == "" {
		cfg.CacheDir = defaultCacheDir()
	}
	if cfg.CacheDir, err = filepath.Abs(cfg.CacheDir); err != nil {
		return cfg, fmt.Errorf("lab %s: cache dir: %w", cfg.Name, err)
	}
	switch cfg.Flavour {
	case "":
		cfg.Flavour = FlavourSystemd
	case FlavourSystemd, FlavourSysV:
	default:
		return cfg, fmt.Errorf("lab %s: flavour %q: want %s or %s", cfg.Name, cfg.Flavour, FlavourSystemd, FlavourSysV)
	}
	if cfg.Base != "" {
		if !filepath.IsAbs(cfg.Base) || len(cfg.Packages) > 0 {
			return cfg, fmt.Errorf("lab %s: base %q: want an absolute path, and no packages", cfg.Name, cfg.Base)
		}
		if fi, err := os.Lstat(filepath.Join(cfg.Base, "sbin", "init")); err != nil || fi.IsDir() {
			return cfg, fmt.Errorf("lab %s: base %s is not a root filesystem with /sbin/init", cfg.Name, cfg.Base)
		}
	}
	if cfg.HostNames != nil {
		if len(cfg.HostNames) != cfg.Hosts {
			return cfg, fmt.Errorf("lab %s: %d host names for %d hosts", cfg.Name, len(cfg.HostNames), cfg.Hosts)
		}
		for _, n := range cfg.HostNames {
			if !hostNameRE.MatchString(n) {
				return cfg, fmt.Errorf("lab %s: host name %q is not a DNS label", cfg.Name, n)
			}
		}
	}
	for _, p := range cfg.Packages {
		if !debNameRE.MatchString(p) {
			return cfg, fmt.Errorf("lab %s: package %q is not a Debian package name", cfg.Name, p)
		}
	}
	return cfg, nil
}

var hostNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

var debNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

func defaultDir(name string) string {
	return filepath.Join("/var/lib/soulstack-lab/labs", name)
}

func defaultCacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	return "/var/cache/soulstack-lab"
}

// names derives every machine-wide name of a lab from its name, so Cleanup
// finds them even without a state file.
type names struct{ lab, prefix string }

func namesFor(lab string) names {
	h := fnv.New32a()
	h.Write([]byte(lab))
	// Interface names are limited to 15 bytes, so they use a hash of the
	// lab name rather than the name itself.
	return names{lab: lab, prefix: fmt.Sprintf("sl%08x", h.Sum32())}
}

func (n names) bridge() string        { return n.prefix + "br" }
func (n names) veth(i int) string     { return n.prefix + "v" + strconv.Itoa(i) }
func (n names) netns(i int) string    { return "sslab-" + n.lab + "-h" + strconv.Itoa(i) }
func (n names) hostname(i int) string { return "lab-host-" + strconv.Itoa(i) }
func (n names) statePath() string     { return filepath.Join(runDir, n.lab+".json") }
func (n names) lockPath() string      { return filepath.Join(runDir, n.lab+".lock") }

// notifyPath is the socket on the machine where host i's systemd reports
// READY=1.
func (n names) notifyPath(i int) string {
	return filepath.Join(runDir, n.lab+".h"+strconv.Itoa(i)+".notify")
}

// isNetns reports whether ns is the name of one of this lab's namespaces.
func (n names) isNetns(ns string) bool {
	rest, ok := strings.CutPrefix(ns, "sslab-"+n.lab+"-h")
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// isVeth reports whether ifname is the machine-side end of one of this
// lab's veth pairs.
func (n names) isVeth(ifname string) bool {
	rest, ok := strings.CutPrefix(ifname, n.prefix+"v")
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}
