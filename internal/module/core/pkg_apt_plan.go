package core

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// aptInstallArgv is the apt-get install command line for specs.
func aptInstallArgv(specs []pkgSpec, o installOpts) []string {
	argv := append(append([]string{"apt-get", "install"}, aptOpts...), o.apt.args()...)
	if o.defaultRelease != "" {
		argv = append(argv, "-t", o.defaultRelease)
	}
	for _, s := range specs {
		switch {
		case s.version != "":
			argv = append(argv, s.name+"="+s.version)
		case s.deb != "":
			argv = append(argv, s.deb)
		default:
			argv = append(argv, s.name)
		}
	}
	return argv
}

// aptChange is one line of apt-get's simulation: a package installed,
// upgraded or downgraded (old is "" for a new one), or removed (new "").
type aptChange struct{ name, old, new string }

// aptPlan is what apt-get -s says a command would do.
type aptPlan []aptChange

var (
	// "Inst foo [1.0.0] (1.0.1 localhost [all])", "Inst foo (1.0.1 …)"
	aptInstRe = regexp.MustCompile(`^Inst (\S+) (?:\[([^\]]*)\] )?\((\S+)`)
	// "Remv foo [1.0.0]", "Purg foo [1.0.0]"
	aptRemvRe = regexp.MustCompile(`^(?:Remv|Purg) (\S+)(?: \[([^\]]*)\])?`)
)

// parseAptSimulation reads the Inst, Remv and Purg lines of apt-get -s; Conf
// lines repeat the Inst ones. Architecture suffixes (foo:amd64) are kept.
func parseAptSimulation(out string) aptPlan {
	var plan aptPlan
	for _, line := range strings.Split(out, "\n") {
		if m := aptInstRe.FindStringSubmatch(line); m != nil {
			plan = append(plan, aptChange{name: m[1], old: m[2], new: m[3]})
		} else if m := aptRemvRe.FindStringSubmatch(line); m != nil {
			plan = append(plan, aptChange{name: m[1], old: m[2]})
		}
	}
	return plan
}

// diff renders the plan one package a line: + new, ~ changed, - removed.
func (p aptPlan) diff() string {
	var b strings.Builder
	for _, c := range p {
		switch {
		case c.new == "":
			fmt.Fprintf(&b, "- %s %s\n", c.name, c.old)
		case c.old == "":
			fmt.Fprintf(&b, "+ %s %s\n", c.name, c.new)
		default:
			fmt.Fprintf(&b, "~ %s %s -> %s\n", c.name, c.old, c.new)
		}
	}
	return b.String()
}

// data is the plan as the result's output: name → new version for what
// is installed or upgraded, and the removed names.
func (p aptPlan) data() (map[string]any, []any) {
	changed := map[string]any{}
	removed := []any{}
	for _, c := range p {
		if c.new == "" {
			removed = append(removed, c.name)
		} else {
			changed[c.name] = c.new
		}
	}
	return changed, removed
}

// names lists the packages the plan touches, sorted.
func (p aptPlan) names() []string {
	var out []string
	for _, c := range p {
		out = append(out, c.name)
	}
	sort.Strings(out)
	return out
}

// aptSimulate runs argv (an apt-get command line) with -s: apt resolves
// everything, prints what it would do and changes nothing.
func aptSimulate(ctx context.Context, argv []string) (aptPlan, error) {
	sim := append([]string{argv[0], "-s"}, argv[1:]...)
	r, err := runCmd(ctx, aptEnv, sim...)
	if err != nil {
		return nil, fmt.Errorf("simulating %s: %w", strings.Join(argv[:2], " "), err)
	}
	if r.rc != 0 {
		if missing := aptNotFound(r.stderr); missing != "" {
			return nil, &aptMissingError{missing}
		}
		return nil, fmt.Errorf("simulating %s: %w", strings.Join(argv[:2], " "), cmdError(sim, r))
	}
	return parseAptSimulation(r.stdout), nil
}

// aptMissingError is a package or version the apt sources do not know.
type aptMissingError struct{ what string }

func (e *aptMissingError) Error() string {
	return e.what + " not found in the configured apt sources"
}

// aptRun runs argv for real; a package or version apt does not know is
// named in the error.
func aptRun(ctx context.Context, argv []string) error {
	r, err := runApt(ctx, argv...)
	if err != nil {
		return fmt.Errorf("running %s: %w", strings.Join(argv[:2], " "), err)
	}
	if r.rc != 0 {
		if missing := aptNotFound(r.stderr); missing != "" {
			return fmt.Errorf("%s not found in the configured apt sources", missing)
		}
		return cmdError(argv, r)
	}
	return nil
}

// dpkgOlder reports whether version a is older than b by dpkg's rules.
func dpkgOlder(ctx context.Context, a, b string) (bool, error) {
	argv := []string{"dpkg", "--compare-versions", a, "lt", b}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return false, fmt.Errorf("comparing versions %s and %s: %w", a, b, err)
	}
	switch r.rc {
	case 0:
		return true, nil
	case 1:
		return false, nil
	}
	return false, fmt.Errorf("comparing versions %s and %s: %w", a, b, cmdError(argv, r))
}
