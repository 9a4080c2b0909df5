package core

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// dnfManager drives rpm and dnf (or yum on old hosts) for the RedHat family.
type dnfManager struct{ tool string }

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

var dnfNoMatchRe = regexp.MustCompile(`(?:No match for argument|Unable to find a match):?\s*(\S+)`)

func (m dnfManager) install(ctx context.Context, specs []pkgSpec) error {
	argv := []string{m.tool, "install", "-y", "-q"}
	for _, s := range specs {
		if s.version != "" {
			argv = append(argv, s.name+"-"+s.version)
		} else {
			argv = append(argv, s.name)
		}
	}
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

func (m dnfManager) remove(ctx context.Context, names []string, _ bool) error {
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
