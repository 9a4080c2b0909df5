package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// baseVersion names the layout of the base; bump it whenever basePackages
// or customizeBase change, so cached bases are rebuilt.
const baseVersion = 1

// basePackages are added to debootstrap's minbase: tini as each sysv host's
// PID 1, and the tools tests and operators reach for (ip, ps, ping, nc).
var basePackages = []string{"iproute2", "iputils-ping", "netcat-openbsd", "procps", "tini"}

// systemdPackages are added to basePackages in the base of systemd hosts.
var systemdPackages = []string{"dbus", "systemd", "systemd-sysv"}

// maskedUnits are masked in the base of systemd hosts: no getty (a host
// has no console), and no timer that would take the dpkg lock or burn CPU
// at random times in the middle of a test.
var maskedUnits = []string{
	"console-getty.service", "getty@.service", "serial-getty@.service", "container-getty@.service", "getty.target",
	"apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "dpkg-db-backup.timer",
	"systemd-tmpfiles-clean.timer", "fstrim.timer", "man-db.timer",
}

// packagesOf returns what debootstrap adds to minbase for a flavour.
func packagesOf(flavour string) []string {
	if flavour == FlavourSystemd {
		return append(slices.Clone(basePackages), systemdPackages...)
	}
	return basePackages
}

// baseName names the cached base of a flavour. The sysv base keeps the name
// it had before flavours existed.
func baseName(flavour string) string {
	if flavour == FlavourSystemd {
		return fmt.Sprintf("base-%s-systemd-v%d", suite, baseVersion)
	}
	return fmt.Sprintf("base-%s-v%d", suite, baseVersion)
}

// ensureBase returns the cached base root filesystem of a flavour, building
// it first if it is missing or was left half-built. The caller holds the
// cache lock, so concurrent labs (in other processes too) build it once.
func ensureBase(ctx context.Context, cache, flavour string, sources sourcesFunc) (dir string, built bool, err error) {
	dir = filepath.Join(cache, baseName(flavour))
	marker := dir + ".complete"
	if _, err := os.Stat(marker); err == nil {
		return dir, false, nil
	}
	archive, _, err := sources()
	if err != nil {
		return "", false, fmt.Errorf("building base: %w", err)
	}
	if err := installDebootstrap(ctx); err != nil {
		return "", false, fmt.Errorf("building base: %w", err)
	}
	if err := requireTools(buildTools); err != nil {
		return "", false, fmt.Errorf("building base: %w", err)
	}
	if err := removeTree(dir); err != nil {
		return "", false, fmt.Errorf("removing half-built base: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, baseName(flavour)+".tmp-")
	if err != nil {
		return "", false, fmt.Errorf("building base: %w", err)
	}
	if err := buildBase(ctx, tmp, flavour, archive); err != nil {
		return "", false, errors.Join(fmt.Errorf("building base: %w", err), removeTree(tmp))
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", false, errors.Join(fmt.Errorf("building base: %w", err), removeTree(tmp))
	}
	if err := os.WriteFile(marker, []byte(strings.Join(packagesOf(flavour), "\n")+"\n"), 0o644); err != nil {
		return "", false, fmt.Errorf("building base: %w", err)
	}
	return dir, true, nil
}

// installDebootstrap installs debootstrap with the machine's apt when it
// is missing; only building the base needs it.
func installDebootstrap(ctx context.Context) error {
	if _, err := exec.LookPath("debootstrap"); err == nil {
		return nil
	}
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	install := []string{"install", "-y", "-q", "--no-install-recommends", "debootstrap"}
	if _, err := run(ctx, env, "apt-get", install...); err == nil {
		return nil
	}
	// The package lists may be missing or stale. An update can fail on a
	// third-party source and still refresh Debian's, so only the install
	// decides.
	_, uerr := run(ctx, env, "apt-get", "-q", "update")
	if _, err := run(ctx, env, "apt-get", install...); err != nil {
		return fmt.Errorf("installing debootstrap: %w", errors.Join(err, uerr))
	}
	return nil
}

func buildBase(ctx context.Context, root, flavour string, archive aptSource) error {
	args := []string{"--variant=minbase", "--components=main", "--include=" + strings.Join(packagesOf(flavour), ",")}
	if archive.SignedBy != "" {
		args = append(args, "--keyring="+archive.SignedBy)
	}
	args = append(args, suite, root, archive.URI)
	if _, err := run(ctx, []string{"LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}, "debootstrap", args...); err != nil {
		if log, rerr := os.ReadFile(filepath.Join(root, "debootstrap", "debootstrap.log")); rerr == nil {
			err = fmt.Errorf("%w\ndebootstrap.log%s", err, tail(string(log)))
		}
		return err
	}
	// debootstrap mounts /proc and /sys inside the target while it works.
	if err := unmountUnder(root); err != nil {
		return err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	return customizeBase(root, flavour)
}

type baseFile struct {
	path, data string
	mode       os.FileMode
}

// customizeBase turns a fresh debootstrap into the hosts' common image.
func customizeBase(root, flavour string) error {
	files := []baseFile{
		// Hosts have no route to any registry: the local repository is the
		// only source.
		{"etc/apt/sources.list", "deb [trusted=yes] file:" + repoInHost + " ./\n", 0o644},
		{"etc/apt/apt.conf.d/90soulstack-lab", "APT::Install-Recommends \"false\";\nAPT::Install-Suggests \"false\";\nAcquire::Languages \"none\";\n", 0o644},
		// No DNS: names of the lab are in /etc/hosts, and with no
		// nameserver line lookups of other names fail at once.
		{"etc/resolv.conf", "# soulstack lab: no DNS; lab names are in /etc/hosts\n", 0o644},
	}
	if flavour == FlavourSysV {
		// With no init system invoke-rc.d starts nothing. With a runlevel
		// it checks the rc2.d links ("(start)" when they disallow) and asks
		// policy-rc.d, which allows what the links allow: enabled services
		// start when their package is installed, as on a sysvinit host.
		// Systemd hosts have neither, as real ones.
		files = append(files,
			baseFile{"usr/sbin/runlevel", "#!/bin/sh\n# soulstack lab: hosts run SysV services as if in runlevel 2.\necho N 2\n", 0o755},
			baseFile{"usr/sbin/policy-rc.d", policyRCD, 0o755})
	}
	for _, f := range files {
		p := filepath.Join(root, f.path)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	if flavour == FlavourSystemd {
		if err := customizeSystemd(root); err != nil {
			return err
		}
	}
	for _, glob := range []string{"etc/apt/sources.list.d/*", "var/lib/apt/lists/*_*", "var/cache/apt/*.bin",
		"var/cache/apt/archives/*.deb", "etc/hostname", "var/log/journal/*"} {
		m, _ := filepath.Glob(filepath.Join(root, glob))
		for _, p := range m {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(filepath.Join(root, repoInHost), 0o755)
}

// customizeSystemd masks maskedUnits and boots to multi-user.target, as
// `systemctl --root` would (links in /etc/systemd/system), and leaves an
// empty machine-id: every host writes its own.
func customizeSystemd(root string) error {
	etc := filepath.Join(root, "etc/systemd/system")
	link := func(target, name string) error {
		p := filepath.Join(etc, name)
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		return os.Symlink(target, p)
	}
	for _, u := range maskedUnits {
		if err := link("/dev/null", u); err != nil {
			return fmt.Errorf("masking %s: %w", u, err)
		}
	}
	if err := link("/lib/systemd/system/multi-user.target", "default.target"); err != nil {
		return fmt.Errorf("setting the default target: %w", err)
	}
	return os.WriteFile(filepath.Join(root, "etc/machine-id"), nil, 0o444)
}

const policyRCD = `#!/bin/sh
# soulstack lab: there is no init system; allow what the rc?.d links allow.
case "$2" in
\(*\)) exit 101 ;;
esac
exit 0
`

// removeTree removes dir after unmounting anything left mounted below it,
// so a removal never reaches through a mount into another file system.
func removeTree(dir string) error {
	if err := unmountUnder(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// removeStaleTemps removes the temporary directories of builds that
// crashed. The caller holds the cache lock, so no build is running.
func removeStaleTemps(cache string) error {
	m, err := filepath.Glob(filepath.Join(cache, "*.tmp-*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range m {
		errs = append(errs, removeTree(p))
	}
	return errors.Join(errs...)
}
