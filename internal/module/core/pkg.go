package core

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	registerNamed("core.pkg.installed", module.Schema{
		Summary: "Ensure packages are installed (apt or dnf), optionally at an exact version, at the newest version (latest) or from a .deb file (deb)",
		Params: aptParams(map[string]module.Param{
			"name":               str(false, "package to install"),
			"names":              typed(module.TypeStrList, "packages to install"),
			"version":            str(false, "exact version wanted (apt: 7:7.0.15-1~deb12u1); only with a single package; an older version than the installed one needs allow_downgrade (apt)"),
			"latest":             {Type: module.TypeBool, Default: false, Description: "apt only: also upgrade installed packages to the candidate version (Ansible's state: latest); changed only if a package moved"},
			"deb":                {Type: module.TypeString, Check: checkDebSource, Description: "apt only: install this .deb, an absolute path on the host or an http(s) URL, instead of name/names; nothing is done when the version it holds is installed (the file is fetched and read in check mode too)"},
			"sha256":             {Type: module.TypeString, Check: checkSHA256, Description: "with deb: the expected SHA-256 of the .deb, hex; a file that does not have it is refused"},
			"only_upgrade":       {Type: module.TypeBool, Default: false, Description: "apt only: upgrade the named packages that are installed and leave the others uninstalled (--only-upgrade)"},
			"install_recommends": typed(module.TypeBool, "apt only: true installs recommended packages too, false does not (--no-install-recommends); unset follows the host's apt configuration"),
			"update_cache":       {Type: module.TypeBool, Default: false, Description: "refresh the package index first (apt-get update, dnf makecache)"},
			"cache_valid_time":   typed(module.TypeInt, "with update_cache: skip the refresh when the index is younger than this many seconds (apt)"),
			"default_release":    str(false, "apt only: install from this release (apt-get -t), e.g. bookworm-backports"),
			"enablerepo":         typed(module.TypeStrList, "dnf only: repositories enabled for this install (--enablerepo)"),
			"exclude":            typed(module.TypeStrList, "dnf only: package names or globs dnf must not install or upgrade in this transaction (--exclude), as Ansible's dnf exclude; not tested on a dnf host (the lab has none)"),
		}),
		AtLeastOne:   [][]string{{"name", "names", "deb"}},
		Unconfinable: true,
	}, pkgInstalled)
	registerNamed("core.pkg.removed", module.Schema{
		Summary: "Ensure packages are not installed (apt or dnf), optionally purging their configuration",
		Params: aptRemoveParams(map[string]module.Param{
			"name":       str(false, "package to remove"),
			"names":      typed(module.TypeStrList, "packages to remove"),
			"purge":      typed(module.TypeBool, "also remove configuration files"),
			"autoremove": {Type: module.TypeBool, Default: false, Description: "apt only: also remove the dependencies nothing needs any more once these are gone (--auto-remove)"},
		}),
		AtLeastOne:   [][]string{{"name", "names"}},
		Unconfinable: true,
	}, pkgRemoved)
}

// pkgState is what the package database says about one package.
type pkgState struct {
	installed bool
	version   string
	config    bool // removed but its configuration files remain (dpkg rc)
}

// pkgManager is one package tool family. Implementations query first and
// only run the installer for what is missing. A new family (zypper,
// pacman) is one file: a type implementing this interface and an init()
// adding it to pkgBackends.
type pkgManager interface {
	name() string
	query(ctx context.Context, pkg string) (pkgState, error)
	// matches reports whether an installed version satisfies a wanted one.
	matches(installed, want string) bool
	// install installs specs (name or name+version); a package the sources
	// do not know gives an error naming it.
	install(ctx context.Context, specs []pkgSpec, o installOpts) error
	remove(ctx context.Context, names []string, o removeOpts) error
	// refresh downloads the package index (apt-get update, dnf makecache).
	refresh(ctx context.Context, env *module.Env) error
	// cacheTime is when the index was last refreshed (zero: unknown).
	cacheTime(env *module.Env) time.Time
	// repoPath is the file defining repository name; repoFile renders it.
	repoPath(name string) string
	repoFile(r repoSpec) ([]byte, error)
}

// removeOpts are core.pkg.removed's options.
type removeOpts struct {
	purge, autoremove bool
	apt               aptFlags
}

// pkgBackend is one package family pickManager can choose.
type pkgBackend struct {
	family string // the soulprint's os.family
	probe  string // a program whose presence means this family
	make   func() pkgManager
}

// pkgBackends lists the families, registered by each pkg_<tool>.go's init.
var pkgBackends []pkgBackend

// pkgSpec is a package to install: a name, optionally at a version, or a
// .deb file (apt).
type pkgSpec struct{ name, version, deb string }

var (
	pkgNameRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_:@-]*$`)
	pkgVersionRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+~:_-]*$`)
)

func pkgNames(a *args) ([]string, error) {
	names := a.strList("names")
	if n := a.str("name"); n != "" {
		names = append([]string{n}, names...)
	}
	if a.err != nil {
		return nil, a.err
	}
	if len(names) == 0 {
		return nil, errors.New("name or names must name at least one package")
	}
	for _, n := range names {
		if !pkgNameRe.MatchString(n) {
			return nil, fmt.Errorf("%q is not a valid package name", n)
		}
	}
	return names, nil
}

// pickManager chooses the package tools from the soulprint's os.family and,
// without facts, from the tools found on the host.
func pickManager(env *module.Env) (pkgManager, error) {
	family := factString(env.Facts, "os.family")
	for _, b := range pkgBackends {
		if b.family == family {
			return b.make(), nil
		}
	}
	for _, b := range pkgBackends {
		if _, err := exec.LookPath(b.probe); err == nil {
			return b.make(), nil
		}
	}
	var probes []string
	for _, b := range pkgBackends {
		probes = append(probes, b.probe)
	}
	return nil, fmt.Errorf("no supported package manager: os.family is %q and none of %s is installed", family, strings.Join(probes, ", "))
}

// factString reads a dotted fact ("os.family") from nested maps, or from a
// flat key of that name.
func factString(facts map[string]any, path string) string {
	if v, ok := facts[path].(string); ok {
		return v
	}
	var cur any = facts
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[part]
	}
	s, _ := cur.(string)
	return s
}

func pkgInstalled(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	if a.has("deb") {
		return debInstalled(ctx, a, env)
	}
	if a.has("sha256") {
		return domain.Result{}, paramErr("sha256", "pins the file of deb; it has no meaning without deb")
	}
	names, err := pkgNames(a)
	if err != nil {
		return domain.Result{}, err
	}
	version := a.str("version")
	latest := a.boolean("latest", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if version != "" {
		if len(names) != 1 {
			return domain.Result{}, errors.New("version pins a single package: use name (not names) with version")
		}
		if !pkgVersionRe.MatchString(version) {
			return domain.Result{}, fmt.Errorf("%q is not a valid package version", version)
		}
		if latest {
			return domain.Result{}, paramErr("latest", "installs the newest version; it cannot go with version %s", version)
		}
	}
	mgr, err := pickManager(env)
	if err != nil {
		return domain.Result{}, err
	}
	_, isApt := mgr.(aptManager)
	if latest && !isApt {
		return domain.Result{}, paramErr("latest", "is supported with apt only, not yet with %s", mgr.name())
	}
	opts, refreshed, err := pkgPrepare(ctx, a, mgr, env)
	if err != nil {
		return domain.Result{}, err
	}
	installed := map[string]any{}
	data := func() map[string]any { return map[string]any{"installed": installed, "cache_refreshed": refreshed} }
	var todo []pkgSpec
	var diff, skipped []string
	for _, n := range names {
		st, err := mgr.query(ctx, n)
		if err != nil {
			return domain.Result{}, err
		}
		switch {
		case !st.installed && opts.apt.onlyUpgrade:
			skipped = append(skipped, n)
		case latest:
			todo = append(todo, pkgSpec{name: n})
			if st.installed {
				installed[n] = st.version
			}
		case st.installed && (version == "" || mgr.matches(st.version, version)):
			installed[n] = st.version
		case st.installed:
			if isApt && !opts.apt.allowDowngrade {
				older, err := dpkgOlder(ctx, version, st.version)
				if err != nil {
					return domain.Result{}, err
				}
				if older {
					return domain.Result{}, paramErr("allow_downgrade", "%s %s is installed and version %s is older: set allow_downgrade: true to downgrade", n, st.version, version)
				}
			}
			todo = append(todo, pkgSpec{name: n, version: version})
			diff = append(diff, fmt.Sprintf("~ %s %s -> %s", n, st.version, version))
		default:
			todo = append(todo, pkgSpec{name: n, version: version})
			diff = append(diff, "+ "+strings.TrimSuffix(n+" "+version, " "))
		}
	}
	msg := "installed: " + strings.Join(names, ", ")
	if len(skipped) > 0 {
		msg = "not installed, left alone (only_upgrade): " + strings.Join(skipped, ", ")
	}
	if latest && len(todo) > 0 {
		return aptLatest(ctx, env, todo, opts, installed, data)
	}
	if len(todo) == 0 {
		return converged(msg, data()), nil
	}
	what := specList(todo)
	diffText := strings.Join(diff, "\n") + "\n"
	if isApt {
		// apt's simulation shows the dependencies and removals too.
		if diffText, err = aptInstallDiff(ctx, todo, opts, diffText); err != nil {
			return domain.Result{}, err
		}
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diffText, Msg: "would install " + what, Data: map[string]any{"installed": installed, "cache_refreshed": false}}, nil
	}
	if err := mgr.install(ctx, todo, opts); err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diffText, Msg: "installed " + what}
	for _, s := range todo {
		st, err := mgr.query(ctx, s.name)
		if err != nil {
			return domain.Result{}, err
		}
		if !st.installed || (s.version != "" && !mgr.matches(st.version, s.version)) {
			res.Failed = true
			res.Msg = fmt.Sprintf("%s ran but %s is still not installed at the wanted version (have %q); is it a virtual package? name the real one", mgr.name(), s.name, st.version)
		}
		installed[s.name] = st.version
	}
	res.Data = data()
	return res, nil
}

// aptInstallDiff is apt-get -s's account of installing todo, or fallback
// when the index does not know a package yet (install refreshes it first).
func aptInstallDiff(ctx context.Context, todo []pkgSpec, opts installOpts, fallback string) (string, error) {
	plan, err := aptSimulate(ctx, aptInstallArgv(todo, opts))
	var missing *aptMissingError
	switch {
	case errors.As(err, &missing):
		return fallback, nil
	case err != nil:
		return "", err
	case len(plan) == 0:
		return fallback, nil
	}
	return plan.diff(), nil
}

// aptLatest installs or upgrades todo to apt's candidate versions: apt-get
// -s says what would move (nothing: converged), check mode stops there.
func aptLatest(ctx context.Context, env *module.Env, todo []pkgSpec, opts installOpts, installed map[string]any, data func() map[string]any) (domain.Result, error) {
	plan, err := aptSimulate(ctx, aptInstallArgv(todo, opts))
	var missing *aptMissingError
	if errors.As(err, &missing) && !env.Check {
		// As install does: a stale or empty index is refreshed once.
		if rerr := (aptManager{}).refresh(ctx, env); rerr != nil {
			return domain.Result{}, fmt.Errorf("%w, and refreshing the index failed: %w", err, rerr)
		}
		plan, err = aptSimulate(ctx, aptInstallArgv(todo, opts))
	}
	if err != nil {
		return domain.Result{}, err
	}
	if len(plan) == 0 {
		return converged("at the newest version: "+specList(todo), data()), nil
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: plan.diff(), Msg: "would install or upgrade " + strings.Join(plan.names(), ", "), Data: data()}, nil
	}
	if err := (aptManager{}).install(ctx, todo, opts); err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: plan.diff(), Msg: "installed or upgraded " + strings.Join(plan.names(), ", ")}
	for _, s := range todo {
		st, err := aptManager{}.query(ctx, s.name)
		if err != nil {
			return domain.Result{}, err
		}
		if !st.installed {
			res.Failed = true
			res.Msg = fmt.Sprintf("apt-get ran but %s is still not installed; is it a virtual package? name the real one", s.name)
		}
		installed[s.name] = st.version
	}
	res.Data = data()
	return res, nil
}

func pkgRemoved(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	names, err := pkgNames(a)
	if err != nil {
		return domain.Result{}, err
	}
	o := removeOpts{purge: a.boolean("purge", false), autoremove: a.boolean("autoremove", false)}
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if o.apt, err = readAptFlags(a); err != nil {
		return domain.Result{}, err
	}
	mgr, err := pickManager(env)
	if err != nil {
		return domain.Result{}, err
	}
	var todo, diff []string
	for _, n := range names {
		st, err := mgr.query(ctx, n)
		if err != nil {
			return domain.Result{}, err
		}
		switch {
		case st.installed:
			todo = append(todo, n)
			diff = append(diff, fmt.Sprintf("- %s %s", n, st.version))
		case o.purge && st.config:
			todo = append(todo, n)
			diff = append(diff, fmt.Sprintf("- %s (configuration files)", n))
		}
	}
	data := map[string]any{"removed": toAnyList(todo)}
	if len(todo) == 0 {
		return converged("not installed: "+strings.Join(names, ", "), data), nil
	}
	verb := "remove"
	if o.purge {
		verb = "purge"
	}
	diffText := strings.Join(diff, "\n") + "\n"
	if _, isApt := mgr.(aptManager); isApt && o.autoremove {
		// apt decides what else goes: its simulation is the diff.
		plan, err := aptSimulate(ctx, aptRemoveArgv(todo, o))
		if err != nil {
			return domain.Result{}, err
		}
		diffText = plan.diff()
		data["removed"] = toAnyList(plan.names())
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diffText, Msg: "would " + verb + " " + strings.Join(todo, ", "), Data: data}, nil
	}
	if err := mgr.remove(ctx, todo, o); err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diffText, Msg: verb + "d " + strings.Join(todo, ", "), Data: data}
	for _, n := range todo {
		st, err := mgr.query(ctx, n)
		if err != nil {
			return domain.Result{}, err
		}
		if st.installed || (o.purge && st.config) {
			res.Failed = true
			res.Msg = fmt.Sprintf("%s ran but %s is still installed", mgr.name(), n)
		}
	}
	return res, nil
}

func specList(specs []pkgSpec) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = s.name
		if s.version != "" {
			parts[i] += " " + s.version
		}
	}
	return strings.Join(parts, ", ")
}

func toAnyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
