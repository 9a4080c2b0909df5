package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// upgradeModes maps Ansible's apt upgrade values to apt-get commands:
// yes and safe upgrade what needs nothing removed (new dependencies may
// be installed, as Ansible's apt-get path does); full and dist may remove
// packages to resolve conflicts; no upgrades nothing (autoremove alone).
var upgradeModes = map[string][]string{
	"yes":  {"upgrade", "--with-new-pkgs"},
	"safe": {"upgrade", "--with-new-pkgs"},
	"full": {"dist-upgrade"},
	"dist": {"dist-upgrade"},
	"no":   {"autoremove"},
}

func checkUpgradeMode(v string) error {
	if _, ok := upgradeModes[v]; !ok {
		return fmt.Errorf("%q: want safe, full, dist, yes or no", v)
	}
	return nil
}

func init() {
	registerNamed("core.pkg.upgraded", module.Schema{
		Summary: "Upgrade the installed packages (apt only; Ansible's apt upgrade:), reporting what moved",
		Params: aptParams(map[string]module.Param{
			"upgrade":          {Type: module.TypeString, Default: "safe", Description: "safe (or yes): apt-get upgrade --with-new-pkgs, never removing a package; full (or dist): apt-get dist-upgrade, which may remove packages to resolve conflicts; no: upgrade nothing (with autoremove: only remove unneeded packages)", Check: checkUpgradeMode},
			"autoremove":       {Type: module.TypeBool, Default: false, Description: "also remove the packages installed as dependencies that nothing needs any more (--auto-remove)"},
			"update_cache":     {Type: module.TypeBool, Default: false, Description: "refresh the package index first (apt-get update)"},
			"cache_valid_time": typed(module.TypeInt, "with update_cache: skip the refresh when the index is younger than this many seconds"),
			"default_release":  str(false, "upgrade from this release (apt-get -t), e.g. bookworm-backports"),
		}),
		Output: map[string]module.Field{
			"upgraded":        outputField(module.TypeMap, "package name → version installed or upgraded to (would be, in check mode)"),
			"removed":         outputField(module.TypeStrList, "packages removed (would be, in check mode)"),
			"cache_refreshed": outputField(module.TypeBool, "the package index was refreshed first (update_cache); a refresh alone is not a change"),
		},
		Unconfinable: true,
	}, pkgUpgraded)
}

// pkgUpgraded runs apt-get -s of the upgrade first: nothing to do is
// converged, check mode reports the simulated plan, and otherwise the
// upgrade runs and the plan is what it did.
func pkgUpgraded(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	mode := a.str("upgrade")
	autoremove := a.boolean("autoremove", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if mode == "" {
		mode = "safe"
	}
	if err := checkUpgradeMode(mode); err != nil {
		return domain.Result{}, paramErr("upgrade", "%v", err)
	}
	mgr, err := pickManager(env)
	if err != nil {
		return domain.Result{}, err
	}
	if _, ok := mgr.(aptManager); !ok {
		return domain.Result{}, fmt.Errorf("core.pkg.upgraded supports apt only, not yet %s", mgr.name())
	}
	opts, refreshed, err := pkgPrepare(ctx, a, mgr, env)
	if err != nil {
		return domain.Result{}, err
	}
	data := func(plan aptPlan) map[string]any {
		up, rm := plan.data()
		return map[string]any{"upgraded": up, "removed": rm, "cache_refreshed": refreshed}
	}
	if mode == "no" && !autoremove {
		return converged("upgrade: no", data(nil)), nil
	}
	argv := append(append([]string{"apt-get"}, upgradeModes[mode]...), aptOpts...)
	argv = append(argv, opts.apt.args()...)
	if autoremove && mode != "no" {
		argv = append(argv, "--auto-remove")
	}
	if opts.defaultRelease != "" {
		argv = append(argv, "-t", opts.defaultRelease)
	}
	plan, err := aptSimulate(ctx, argv)
	if err != nil {
		return domain.Result{}, err
	}
	if len(plan) == 0 {
		return converged("nothing to upgrade", data(nil)), nil
	}
	what := strings.Join(plan.names(), ", ")
	if env.Check {
		return domain.Result{Changed: true, Diff: plan.diff(), Msg: "would upgrade " + what, Data: data(plan)}, nil
	}
	if err := aptRun(ctx, argv); err != nil {
		return domain.Result{}, fmt.Errorf("upgrading: %w", err)
	}
	return domain.Result{Changed: true, Diff: plan.diff(), Msg: "upgraded " + what, Data: data(plan)}, nil
}
