package core

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

// defaultDpkgOptions is Ansible's apt default: keep configuration files the
// admin changed, take the package's new default otherwise.
const defaultDpkgOptions = "force-confdef,force-confold"

// aptParams are the apt-only switches core.pkg.installed and
// core.pkg.upgraded share, named as Ansible's apt module names them.
func aptParams(m map[string]module.Param) map[string]module.Param {
	m["allow_unauthenticated"] = module.Param{Type: module.TypeBool, Default: false, Description: "apt only: install packages that cannot be authenticated (--allow-unauthenticated), e.g. from a repository without a signed Release file"}
	m["allow_downgrade"] = module.Param{Type: module.TypeBool, Default: false, Description: "apt only: allow replacing an installed package with an older version (--allow-downgrades); without it a downgrade is refused"}
	m["fail_on_autoremove"] = module.Param{Type: module.TypeBool, Default: false, Description: "apt only: fail instead of removing any package to resolve the install or upgrade (--no-remove)"}
	return aptRemoveParams(m)
}

// aptRemoveParams are the apt-only switches core.pkg.removed has too.
func aptRemoveParams(m map[string]module.Param) map[string]module.Param {
	m["allow_change_held_packages"] = module.Param{Type: module.TypeBool, Default: false, Description: "apt only: allow installing, upgrading or removing packages held by apt-mark hold (--allow-change-held-packages)"}
	m["dpkg_options"] = module.Param{Type: module.TypeString, Default: defaultDpkgOptions, Description: "apt only: comma-separated dpkg options, each passed as -o Dpkg::Options::=--<option>", Check: checkDpkgOptions}
	return m
}

// installOpts are core.pkg.installed's per-family options; a family that
// has no such option refuses it by name.
type installOpts struct {
	defaultRelease string // apt -t
	enableRepo     []string
	exclude        []string // dnf --exclude
	apt            aptFlags
}

// aptFlags are the apt-get switches of aptParams and install_recommends.
type aptFlags struct {
	allowUnauthenticated bool
	allowDowngrade       bool
	allowHeld            bool
	recommends           *bool // nil: the host's APT::Install-Recommends
	onlyUpgrade          bool
	noRemove             bool
	dpkgOptions          []string
}

// set names the first apt-only switch that is on, "" when none is: the
// dnf side refuses it by that name.
func (f aptFlags) set() string {
	switch {
	case f.allowUnauthenticated:
		return "allow_unauthenticated"
	case f.allowDowngrade:
		return "allow_downgrade"
	case f.allowHeld:
		return "allow_change_held_packages"
	case f.recommends != nil:
		return "install_recommends"
	case f.onlyUpgrade:
		return "only_upgrade"
	case f.noRemove:
		return "fail_on_autoremove"
	case f.dpkgOptions != nil && strings.Join(f.dpkgOptions, ",") != defaultDpkgOptions:
		return "dpkg_options"
	}
	return ""
}

var dpkgOptionRe = regexp.MustCompile(`^[a-z][a-z0-9-]*(=[A-Za-z0-9_./:-]+)?$`)

// checkDpkgOptions accepts "force-confdef,force-confold"-style lists.
func checkDpkgOptions(v string) error {
	_, err := parseDpkgOptions(v)
	return err
}

func parseDpkgOptions(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return []string{}, nil
	}
	var out []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimPrefix(strings.TrimSpace(o), "--")
		if !dpkgOptionRe.MatchString(o) {
			return nil, fmt.Errorf("%q is not a dpkg option like force-confold (a comma-separated list, without --)", o)
		}
		out = append(out, o)
	}
	return out, nil
}

// readAptFlags reads aptParams (and install_recommends, only_upgrade when
// the module has them).
func readAptFlags(a *args) (aptFlags, error) {
	f := aptFlags{
		allowUnauthenticated: a.boolean("allow_unauthenticated", false),
		allowDowngrade:       a.boolean("allow_downgrade", false),
		allowHeld:            a.boolean("allow_change_held_packages", false),
		onlyUpgrade:          a.boolean("only_upgrade", false),
		noRemove:             a.boolean("fail_on_autoremove", false),
	}
	if a.has("install_recommends") {
		r := a.boolean("install_recommends", false)
		f.recommends = &r
	}
	opts := defaultDpkgOptions
	if a.has("dpkg_options") {
		opts = a.str("dpkg_options")
	}
	if a.err != nil {
		return f, a.err
	}
	var err error
	if f.dpkgOptions, err = parseDpkgOptions(opts); err != nil {
		return f, paramErr("dpkg_options", "%v", err)
	}
	return f, nil
}

// dnfExcludeRe is a package name or a glob of one (dnf's --exclude).
var dnfExcludeRe = regexp.MustCompile(`^[A-Za-z0-9.+_:@*?\[\]-]+$`)

// pkgPrepare reads core.pkg.installed's index and source options and
// refreshes the package index when update_cache asks for it and the index
// is older than cache_valid_time (never in check mode).
func pkgPrepare(ctx context.Context, a *args, mgr pkgManager, env *module.Env) (installOpts, bool, error) {
	o := installOpts{defaultRelease: a.str("default_release"), enableRepo: a.strList("enablerepo"), exclude: a.strList("exclude")}
	update := a.boolean("update_cache", false)
	valid, hasValid := a.integer("cache_valid_time")
	if a.err != nil {
		return o, false, a.err
	}
	var err error
	if o.apt, err = readAptFlags(a); err != nil {
		return o, false, err
	}
	if o.defaultRelease != "" && !pkgVersionRe.MatchString(o.defaultRelease) {
		return o, false, paramErr("default_release", "%q is not a release name", o.defaultRelease)
	}
	for _, r := range o.enableRepo {
		if !repoNameRe.MatchString(r) {
			return o, false, paramErr("enablerepo", "%q is not a repository id", r)
		}
	}
	for _, x := range o.exclude {
		if !dnfExcludeRe.MatchString(x) {
			return o, false, paramErr("exclude", "%q is not a package name or glob", x)
		}
	}
	if hasValid && (valid < 0 || !update) {
		return o, false, paramErr("cache_valid_time", "wants update_cache: true and a number of seconds >= 0")
	}
	if !update || env.Check {
		return o, false, nil
	}
	if hasValid {
		if t := mgr.cacheTime(env); !t.IsZero() && time.Since(t) < time.Duration(valid)*time.Second {
			return o, false, nil
		}
	}
	if err := mgr.refresh(ctx, env); err != nil {
		return o, false, fmt.Errorf("param \"update_cache\": %w", err)
	}
	return o, true, nil
}
