package core

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

// pkgPrepare reads core.pkg.installed's index and source options and
// refreshes the package index when update_cache asks for it and the index
// is older than cache_valid_time (never in check mode).
func pkgPrepare(ctx context.Context, a *args, mgr pkgManager, env *module.Env) (installOpts, bool, error) {
	o := installOpts{defaultRelease: a.str("default_release"), enableRepo: a.strList("enablerepo")}
	update := a.boolean("update_cache", false)
	valid, hasValid := a.integer("cache_valid_time")
	if a.err != nil {
		return o, false, a.err
	}
	if o.defaultRelease != "" && !pkgVersionRe.MatchString(o.defaultRelease) {
		return o, false, paramErr("default_release", "%q is not a release name", o.defaultRelease)
	}
	for _, r := range o.enableRepo {
		if !repoNameRe.MatchString(r) {
			return o, false, paramErr("enablerepo", "%q is not a repository id", r)
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
