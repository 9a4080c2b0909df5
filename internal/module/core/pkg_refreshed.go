package core

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	registerNamed("core.pkg.index_refreshed", module.Schema{
		Summary: "Refresh the package index (apt-get update, dnf makecache) with no package named, as Ansible's apt update_cache: true alone; changed when it refreshed",
		Params: map[string]module.Param{
			"cache_valid_time": typed(module.TypeInt, "skip the refresh when the index is younger than this many seconds (apt: the time of the last refresh by a soul or apt's daily job; dnf: always refreshes)"),
		},
		Output: map[string]module.Field{
			"cache_updated":     outputField(module.TypeBool, "the index was refreshed"),
			"cache_update_time": outputField(module.TypeInt, "when the index was last refreshed, Unix seconds (0: unknown)"),
		},
		Unconfinable: true,
	}, pkgIndexRefreshed)
}

func pkgIndexRefreshed(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	valid, hasValid := a.integer("cache_valid_time")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if hasValid && valid < 0 {
		return domain.Result{}, paramErr("cache_valid_time", "wants a number of seconds >= 0")
	}
	mgr, err := pickManager(env)
	if err != nil {
		return domain.Result{}, err
	}
	last := mgr.cacheTime(env)
	unix := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.Unix()
	}
	if hasValid && !last.IsZero() && time.Since(last) < time.Duration(valid)*time.Second {
		return converged(fmt.Sprintf("the %s index is younger than %ds", mgr.name(), valid),
			map[string]any{"cache_updated": false, "cache_update_time": unix(last)}), nil
	}
	if env.Check {
		return domain.Result{Changed: true, Msg: "would refresh the " + mgr.name() + " index",
			Data: map[string]any{"cache_updated": false, "cache_update_time": unix(last)}}, nil
	}
	if err := mgr.refresh(ctx, env); err != nil {
		return domain.Result{}, err
	}
	now := mgr.cacheTime(env)
	if now.IsZero() {
		now = time.Now()
	}
	return domain.Result{Changed: true, Msg: "refreshed the " + mgr.name() + " index",
		Data: map[string]any{"cache_updated": true, "cache_update_time": now.Unix()}}, nil
}
