package core

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// aptManager drives dpkg-query and apt-get for the Debian family.
type aptManager struct{}

func init() {
	pkgBackends = append(pkgBackends, pkgBackend{family: "debian", probe: "dpkg-query", make: func() pkgManager { return aptManager{} }})
}

var aptEnv = map[string]string{
	"DEBIAN_FRONTEND":          "noninteractive",
	"APT_LISTCHANGES_FRONTEND": "none",
	"NEEDRESTART_MODE":         "a",
}

// aptOpts answer yes; aptFlags.args adds the dpkg options. runApt adds
// how long to wait for a dpkg lock another process holds.
var aptOpts = []string{"-y", "-q"}

// aptLockWait is how long apt waits for a dpkg lock another process holds
// when the task has no deadline; aptLockMargin is left between apt giving
// up on the lock and the task's deadline, so that apt itself names the
// lock's holder while the task can still report it, and never installs
// after the task has failed.
const (
	aptLockWait   = 300 * time.Second
	aptLockMargin = 5 * time.Second
)

// aptLockTimeout is the DPkg::Lock::Timeout (seconds) for a command run
// under ctx: aptLockWait, bounded by the task's deadline less the margin.
func aptLockTimeout(ctx context.Context, now time.Time) int {
	wait := aptLockWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, d.Sub(now)-aptLockMargin)
	}
	return max(int(wait/time.Second), 0)
}

// dpkgLockHeld matches apt's "Could not get lock /var/lib/dpkg/lock-frontend.
// It is held by process 1234 (apt-get)"; dpkgLockUnavailable its final
// error after a lock wait, which names only the lock.
var (
	dpkgLockHeld        = regexp.MustCompile(`Could not get lock (\S+?)\.? It is held by process (\d+)(?: \(([^)]*)\))?`)
	dpkgLockUnavailable = regexp.MustCompile(`Unable to acquire the dpkg (?:frontend )?lock \((/[^)]+)\)`)
)

// runApt runs an apt-get command line (argv[0] apt-get, argv[1] its verb)
// with the lock wait of aptLockTimeout. When another process held the dpkg
// lock throughout, the result's note names it and how long apt waited.
func runApt(ctx context.Context, argv ...string) (procResult, error) {
	wait := aptLockTimeout(ctx, time.Now())
	full := append(append(append([]string{}, argv[:2]...), "-o", fmt.Sprintf("DPkg::Lock::Timeout=%d", wait)), argv[2:]...)
	r, err := runPkgCmd(ctx, aptEnv, full...)
	if err == nil && r.rc != 0 {
		if holder, lock := dpkgLockHolder(r.stderr); lock != "" {
			r.note = fmt.Sprintf("the dpkg lock %s is held by %s; waited %ds for it, within the task's timeout", lock, holder, wait)
		}
	}
	return r, err
}

// dpkgLockHolder reads from apt's stderr which lock it could not take
// and who holds it: apt names the holder only when it did not wait, so
// otherwise the lock is asked (F_GETLK) and the holder's command read
// from /proc. lock is "" when stderr is not about a held lock.
func dpkgLockHolder(stderr string) (holder, lock string) {
	if m := dpkgLockHeld.FindStringSubmatch(stderr); m != nil {
		holder = "process " + m[2]
		if m[3] != "" {
			holder += " (" + m[3] + ")"
		}
		return holder, m[1]
	}
	m := dpkgLockUnavailable.FindStringSubmatch(stderr)
	if m == nil {
		return "", ""
	}
	lock = m[1]
	pid := lockOwner(lock)
	if pid <= 0 {
		return "another process (not visible from here)", lock
	}
	holder = "process " + strconv.Itoa(pid)
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
		holder += " (" + strings.TrimSpace(string(b)) + ")"
	}
	return holder, lock
}

// lockOwner is the pid holding a conflicting fcntl lock on path, 0 when
// none (or it cannot be told).
func lockOwner(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil || lk.Type == syscall.F_UNLCK {
		return 0
	}
	return int(lk.Pid)
}

// args are the apt-get switches of f: the dpkg options (by default keep
// configuration files the admin changed, take the package's new default
// otherwise) and the allow_* and install_recommends params.
func (f aptFlags) args() []string {
	opts := f.dpkgOptions
	if opts == nil {
		opts, _ = parseDpkgOptions(defaultDpkgOptions)
	}
	var argv []string
	for _, o := range opts {
		argv = append(argv, "-o", "Dpkg::Options::=--"+o)
	}
	if f.allowUnauthenticated {
		argv = append(argv, "--allow-unauthenticated")
	}
	if f.allowDowngrade {
		argv = append(argv, "--allow-downgrades")
	}
	if f.allowHeld {
		argv = append(argv, "--allow-change-held-packages")
	}
	if f.recommends != nil && *f.recommends {
		argv = append(argv, "-o", "APT::Install-Recommends=true")
	} else if f.recommends != nil {
		argv = append(argv, "--no-install-recommends")
	}
	if f.onlyUpgrade {
		argv = append(argv, "--only-upgrade")
	}
	if f.noRemove {
		argv = append(argv, "--no-remove")
	}
	return argv
}

func (aptManager) name() string { return "apt-get" }

func (aptManager) query(ctx context.Context, pkg string) (pkgState, error) {
	argv := []string{"dpkg-query", "-W", "-f=${Status} ${Version}\n", pkg}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return pkgState{}, fmt.Errorf("querying package %s: %w", pkg, err)
	}
	if r.rc == 1 && strings.Contains(r.stderr, "no packages found") {
		return pkgState{}, nil
	}
	if r.rc != 0 {
		return pkgState{}, fmt.Errorf("querying package %s: %w", pkg, cmdError(argv, r))
	}
	return parseDpkgStatus(r.stdout), nil
}

// parseDpkgStatus reads "want flag status version" lines; with several
// architectures the installed one wins.
func parseDpkgStatus(out string) pkgState {
	var st pkgState
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		switch f[2] {
		case "installed":
			st.installed = true
			if len(f) > 3 {
				st.version = f[3]
			}
			return st
		case "config-files":
			st.config = true
		}
	}
	return st
}

func (aptManager) matches(installed, want string) bool { return installed == want }

var (
	aptNoPkgRe     = regexp.MustCompile(`Unable to locate package (\S+)`)
	aptNoCandRe    = regexp.MustCompile(`Package '([^']+)' has no installation candidate`)
	aptNoVersionRe = regexp.MustCompile(`Version '([^']+)' for '([^']+)' was not found`)
)

// aptNotFound returns a message naming what apt could not find, or "".
func aptNotFound(stderr string) string {
	var parts []string
	for _, m := range aptNoPkgRe.FindAllStringSubmatch(stderr, -1) {
		parts = append(parts, "package "+m[1])
	}
	for _, m := range aptNoCandRe.FindAllStringSubmatch(stderr, -1) {
		parts = append(parts, "package "+m[1]+" (no installation candidate)")
	}
	for _, m := range aptNoVersionRe.FindAllStringSubmatch(stderr, -1) {
		parts = append(parts, "version "+m[1]+" of package "+m[2])
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ")
}

// install runs apt-get install; when apt does not know a package or
// version it refreshes the package lists once (apt-get update) and retries,
// so a freshly added source or an empty list cache works.
func (m aptManager) install(ctx context.Context, specs []pkgSpec, o installOpts) error {
	if len(o.enableRepo) > 0 {
		return paramErr("enablerepo", "is a dnf option; apt has default_release (-t) instead")
	}
	if len(o.exclude) > 0 {
		return paramErr("exclude", "is a dnf option; with apt, hold the package (dpkg --set-selections, apt-mark hold) instead")
	}
	argv := aptInstallArgv(specs, o)
	for attempt := 0; ; attempt++ {
		r, err := runApt(ctx, argv...)
		if err != nil {
			return fmt.Errorf("installing %s: %w", specList(specs), err)
		}
		if r.rc == 0 {
			return nil
		}
		missing := aptNotFound(r.stderr)
		if missing == "" {
			return fmt.Errorf("installing %s: %w", specList(specs), cmdError(argv, r))
		}
		if attempt > 0 {
			return fmt.Errorf("%s not found in the configured apt sources (after apt-get update)", missing)
		}
		up := append([]string{"apt-get", "update"}, aptOpts...)
		if r, err := runApt(ctx, up...); err != nil || r.rc != 0 {
			if err == nil {
				err = cmdError(up, r)
			}
			return fmt.Errorf("%s not found in the configured apt sources, and refreshing them failed: %w", missing, err)
		}
	}
}

func (aptManager) remove(ctx context.Context, names []string, o removeOpts) error {
	argv := aptRemoveArgv(names, o)
	r, err := runApt(ctx, argv...)
	if err != nil {
		return fmt.Errorf("removing %s: %w", strings.Join(names, ", "), err)
	}
	if r.rc != 0 {
		return fmt.Errorf("removing %s: %w", strings.Join(names, ", "), cmdError(argv, r))
	}
	return nil
}

// aptRemoveArgv is the apt-get remove (or purge) command line for names.
func aptRemoveArgv(names []string, o removeOpts) []string {
	verb := "remove"
	if o.purge {
		verb = "purge"
	}
	argv := append(append([]string{"apt-get", verb}, aptOpts...), o.apt.args()...)
	if o.autoremove {
		argv = append(argv, "--auto-remove")
	}
	return append(argv, names...)
}

// aptStamp is touched after each successful apt-get update by a soul (the
// file Debian's apt.systemd.daily touches too): cache_valid_time reads it.
const aptStamp = "/var/lib/apt/periodic/update-success-stamp"

func (aptManager) refresh(ctx context.Context, env *module.Env) error {
	argv := append([]string{"apt-get", "update"}, aptOpts...)
	r, err := runApt(ctx, argv...)
	if err == nil && r.rc != 0 {
		err = cmdError(argv, r)
	}
	if err != nil {
		return fmt.Errorf("refreshing the apt index: %w", err)
	}
	t, err := fsOf(env).Open(aptStamp, safefs.Options{MakeDirs: true})
	if err != nil {
		return fmt.Errorf("stamping the apt refresh: %w", err)
	}
	defer t.Close()
	return t.WriteFile(nil, 0o644, 0, 0)
}

func (aptManager) cacheTime(env *module.Env) time.Time {
	t, err := fsOf(env).Open(aptStamp, safefs.Options{})
	if err != nil {
		return time.Time{}
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil || !exists {
		return time.Time{}
	}
	return fi.ModTime
}

// repoFile renders a deb822 .sources file. signed_by is a keyring path or
// the armored key itself, embedded as a multi-line field (apt ≥ 2.3).
func (aptManager) repoPath(name string) string {
	return path.Join("/etc/apt/sources.list.d", name+".sources")
}

func (aptManager) repoFile(r repoSpec) ([]byte, error) {
	if r.baseurl != "" || r.gpgkey != "" {
		return nil, paramErr("baseurl", "baseurl and gpgkey are dnf params; apt takes uris, suites, components and signed_by")
	}
	if len(r.uris) == 0 {
		return nil, paramErr("uris", "at least one URI is required")
	}
	if len(r.suites) == 0 {
		return nil, paramErr("suites", "at least one suite is required (\"./\" for a flat repository)")
	}
	flat := strings.HasSuffix(r.suites[0], "/")
	if flat && len(r.components) > 0 {
		return nil, paramErr("components", "a flat repository (suite ending in /) has no components")
	}
	if !flat && len(r.components) == 0 {
		return nil, paramErr("components", "at least one component is required (e.g. main)")
	}
	for _, f := range [][]string{r.uris, r.suites, r.components, r.types, r.architectures} {
		for _, v := range f {
			if v == "" || strings.ContainsAny(v, " \t\r\n#") {
				return nil, paramErr("uris", "%q: values are single words without spaces or #", v)
			}
		}
	}
	for _, u := range r.uris {
		if !strings.Contains(u, ":") {
			return nil, paramErr("uris", "%q is not a URI (http://, https://, file:, …)", u)
		}
	}
	types := r.types
	if len(types) == 0 {
		types = []string{"deb"}
	}
	for _, t := range types {
		if t != "deb" && t != "deb-src" {
			return nil, paramErr("types", "%q: want deb or deb-src", t)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Managed by Soul Stack (core.pkg.repository %s); local changes are overwritten.\n", r.name)
	fmt.Fprintf(&b, "Types: %s\nURIs: %s\nSuites: %s\n", strings.Join(types, " "), strings.Join(r.uris, " "), strings.Join(r.suites, " "))
	if len(r.components) > 0 {
		fmt.Fprintf(&b, "Components: %s\n", strings.Join(r.components, " "))
	}
	if len(r.architectures) > 0 {
		fmt.Fprintf(&b, "Architectures: %s\n", strings.Join(r.architectures, " "))
	}
	if !r.enabled {
		b.WriteString("Enabled: no\n")
	}
	if r.trusted {
		b.WriteString("Trusted: yes\n")
	}
	if err := checkSignedBy(r.signedBy); err != nil {
		return nil, paramErr("signed_by", "%v", err)
	}
	switch key := strings.TrimSpace(r.signedBy); {
	case key == "":
	case strings.HasPrefix(key, "/"):
		fmt.Fprintf(&b, "Signed-By: %s\n", key)
	default:
		b.WriteString("Signed-By:\n")
		for _, l := range strings.Split(key, "\n") {
			if l = strings.TrimRight(l, " \t\r"); l == "" {
				l = "."
			}
			b.WriteString(" " + l + "\n")
		}
	}
	return []byte(b.String()), nil
}

// checkSignedBy accepts a keyring path or an ASCII-armored public key.
func checkSignedBy(v string) error {
	key := strings.TrimSpace(v)
	switch {
	case key == "":
		return nil
	case strings.HasPrefix(key, "/"):
		if strings.ContainsAny(key, " \t\r\n") {
			return fmt.Errorf("%q: a keyring path has no spaces", key)
		}
		return nil
	case strings.HasPrefix(key, "-----BEGIN PGP PUBLIC KEY BLOCK-----") && strings.HasSuffix(key, "-----END PGP PUBLIC KEY BLOCK-----"):
		return nil
	}
	return fmt.Errorf("want a keyring path (/usr/share/keyrings/x.gpg) or an ASCII-armored public key (-----BEGIN PGP PUBLIC KEY BLOCK----- …)")
}
