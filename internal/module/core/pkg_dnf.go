package core

import (
	"context"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

// dnfManager drives rpm and dnf (or yum on old hosts) for the RedHat family.
type dnfManager struct{ tool string }

func init() {
	pkgBackends = append(pkgBackends, pkgBackend{family: "redhat", probe: "rpm", make: func() pkgManager { return newDNFManager() }})
}

func newDNFManager() dnfManager {
	if _, err := exec.LookPath("dnf"); err != nil {
		if _, err := exec.LookPath("yum"); err == nil {
			return dnfManager{tool: "yum"}
		}
	}
	return dnfManager{tool: "dnf"}
}

func (m dnfManager) name() string { return m.tool }

func (dnfManager) query(ctx context.Context, pkg string) (pkgState, error) {
	argv := []string{"rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}\n", pkg}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return pkgState{}, fmt.Errorf("querying package %s: %w", pkg, err)
	}
	if r.rc != 0 {
		if strings.Contains(r.stdout+r.stderr, "is not installed") {
			return pkgState{}, nil
		}
		return pkgState{}, fmt.Errorf("querying package %s: %w", pkg, cmdError(argv, r))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(r.stdout), "\n")
	return pkgState{installed: true, version: line}, nil
}

// matches accepts "1.2.3" for an installed "1.2.3-4.el9", the full
// "1.2.3-4.el9", and an epoch prefix ("2:1.2.3-4.el9").
func (dnfManager) matches(installed, want string) bool {
	if _, v, ok := strings.Cut(want, ":"); ok {
		want = v
	}
	if installed == want {
		return true
	}
	ver, _, _ := strings.Cut(installed, "-")
	return ver == want
}

// dnfInstallArgv is the install command line: the repositories enabled
// and the packages excluded for this transaction, then the packages.
func dnfInstallArgv(tool string, specs []pkgSpec, o installOpts) []string {
	argv := []string{tool, "install", "-y", "-q"}
	for _, r := range o.enableRepo {
		argv = append(argv, "--enablerepo="+r)
	}
	for _, x := range o.exclude {
		argv = append(argv, "--exclude="+x)
	}
	for _, s := range specs {
		if s.version != "" {
			argv = append(argv, s.name+"-"+s.version)
		} else {
			argv = append(argv, s.name)
		}
	}
	return argv
}

var dnfNoMatchRe = regexp.MustCompile(`(?:No match for argument|Unable to find a match):?\s*(\S+)`)

func (m dnfManager) install(ctx context.Context, specs []pkgSpec, o installOpts) error {
	if o.defaultRelease != "" {
		return paramErr("default_release", "is an apt option (-t); dnf has enablerepo instead")
	}
	if p := o.apt.set(); p != "" {
		return paramErr(p, "is an apt option; %s does not support it here", m.tool)
	}
	argv := dnfInstallArgv(m.tool, specs, o)
	for attempt := 0; ; attempt++ {
		r, err := runPkgCmd(ctx, nil, argv...)
		if err != nil {
			return fmt.Errorf("installing %s: %w", specList(specs), err)
		}
		if r.rc == 0 {
			return nil
		}
		ms := dnfNoMatchRe.FindAllStringSubmatch(r.stdout+r.stderr, -1)
		if len(ms) == 0 {
			return fmt.Errorf("installing %s: %w", specList(specs), cmdError(argv, r))
		}
		if attempt > 0 {
			var names []string
			for _, mm := range ms {
				names = append(names, mm[1])
			}
			return fmt.Errorf("package %s not found in the configured %s repositories (after refreshing metadata)", strings.Join(names, ", "), m.tool)
		}
		argv = append(argv[:2:2], append([]string{"--refresh"}, argv[2:]...)...)
	}
}

func (m dnfManager) remove(ctx context.Context, names []string, o removeOpts) error {
	if p := o.apt.set(); p != "" {
		return paramErr(p, "is an apt option; %s does not support it here", m.tool)
	}
	if o.autoremove {
		return paramErr("autoremove", "is an apt option; %s removes unneeded dependencies by its clean_requirements_on_remove setting", m.tool)
	}
	argv := append([]string{m.tool, "remove", "-y", "-q"}, names...)
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return fmt.Errorf("removing %s: %w", strings.Join(names, ", "), err)
	}
	if r.rc != 0 {
		return fmt.Errorf("removing %s: %w", strings.Join(names, ", "), cmdError(argv, r))
	}
	return nil
}

func (m dnfManager) refresh(ctx context.Context, _ *module.Env) error {
	argv := []string{m.tool, "makecache", "-q"}
	r, err := runPkgCmd(ctx, nil, argv...)
	if err == nil && r.rc != 0 {
		err = cmdError(argv, r)
	}
	if err != nil {
		return fmt.Errorf("refreshing the %s metadata: %w", m.tool, err)
	}
	return nil
}

// cacheTime is unknown for dnf, which expires its metadata itself
// (metadata_expire): update_cache always runs makecache.
func (dnfManager) cacheTime(*module.Env) time.Time { return time.Time{} }

// repoFile renders a yum/dnf .repo file.
func (dnfManager) repoPath(name string) string { return path.Join("/etc/yum.repos.d", name+".repo") }

func (dnfManager) repoFile(r repoSpec) ([]byte, error) {
	if len(r.uris) > 0 || len(r.suites) > 0 || len(r.components) > 0 || r.signedBy != "" {
		return nil, paramErr("uris", "uris, suites, components and signed_by are apt params; dnf takes baseurl and gpgkey")
	}
	if r.baseurl == "" {
		return nil, paramErr("baseurl", "required for a dnf repository")
	}
	for _, f := range []struct{ param, v string }{{"baseurl", r.baseurl}, {"gpgkey", r.gpgkey}} {
		for _, u := range strings.Fields(f.v) {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "file://") {
				return nil, paramErr(f.param, "%q: want http://, https:// or file:// URLs", u)
			}
		}
		if strings.ContainsAny(f.v, "\r\n") {
			return nil, paramErr(f.param, "URLs are separated by spaces")
		}
	}
	desc := r.description
	if desc == "" {
		desc = r.name
	}
	if strings.ContainsAny(desc, "\r\n") {
		return nil, paramErr("description", "must be one line")
	}
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Managed by Soul Stack (core.pkg.repository %s); local changes are overwritten.\n[%s]\nname=%s\nbaseurl=%s\nenabled=%d\ngpgcheck=%d\n",
		r.name, r.name, desc, r.baseurl, b(r.enabled), b(r.gpgcheck))
	if r.gpgkey != "" {
		fmt.Fprintf(&sb, "gpgkey=%s\n", r.gpgkey)
	}
	return []byte(sb.String()), nil
}
