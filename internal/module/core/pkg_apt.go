package core

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// aptManager drives dpkg-query and apt-get for the Debian family.
type aptManager struct{}

var aptEnv = map[string]string{
	"DEBIAN_FRONTEND":          "noninteractive",
	"APT_LISTCHANGES_FRONTEND": "none",
	"NEEDRESTART_MODE":         "a",
}

// aptOpts keep configuration files the admin changed, take the package's
// new default otherwise, and wait for a dpkg lock held by another apt run
// instead of failing at once.
var aptOpts = []string{"-y", "-q",
	"-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
	"-o", "DPkg::Lock::Timeout=300"}

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
func (m aptManager) install(ctx context.Context, specs []pkgSpec) error {
	argv := append([]string{"apt-get", "install"}, aptOpts...)
	for _, s := range specs {
		if s.version != "" {
			argv = append(argv, "--allow-downgrades")
			break
		}
	}
	for _, s := range specs {
		if s.version != "" {
			argv = append(argv, s.name+"="+s.version)
		} else {
			argv = append(argv, s.name)
		}
	}
	for attempt := 0; ; attempt++ {
		r, err := runPkgCmd(ctx, aptEnv, argv...)
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
		if r, err := runPkgCmd(ctx, aptEnv, up...); err != nil || r.rc != 0 {
			if err == nil {
				err = cmdError(up, r)
			}
			return fmt.Errorf("%s not found in the configured apt sources, and refreshing them failed: %w", missing, err)
		}
	}
}

func (aptManager) remove(ctx context.Context, names []string, purge bool) error {
	verb := "remove"
	if purge {
		verb = "purge"
	}
	argv := append(append([]string{"apt-get", verb}, aptOpts...), names...)
	r, err := runPkgCmd(ctx, aptEnv, argv...)
	if err != nil {
		return fmt.Errorf("removing %s: %w", strings.Join(names, ", "), err)
	}
	if r.rc != 0 {
		return fmt.Errorf("removing %s: %w", strings.Join(names, ", "), cmdError(argv, r))
	}
	return nil
}
