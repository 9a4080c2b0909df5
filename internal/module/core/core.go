// Package core implements the core.* modules of SPEC §9. Each family lives in
// its own file and registers its modules in init().
//
// Every module follows one shape: read the current state, compare it with
// the wanted state, return early (changed: false) when they match, and
// mutate only outside check mode. In check mode a module returns
// changed: true with a diff of what it would do.
//
// Files are reached through internal/safefs, which never lets a symlink or
// hard link planted by an unprivileged user redirect root's writes.
//
// Confinement: when Env.Root is set (the soul's --root, used by `keeper dev`
// and `soul swarm`), file modules resolve every path under Root as if it were
// the filesystem root (`..` is rejected and symlinks cannot leave Root),
// core.exec.run and core.cmd.shell start in Root, and modules that change
// host-global state (packages, services, sysctl, users) refuse to run.
package core

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

type applyFunc func(ctx context.Context, params map[string]any, env *module.Env) (domain.Result, error)

// fn adapts a name, a schema and an apply function to module.Module.
type fn struct {
	name   string
	schema module.Schema
	apply  applyFunc
}

var _ module.Module = (*fn)(nil)

func (f *fn) Name() string          { return f.name }
func (f *fn) Schema() module.Schema { return f.schema }

// Apply validates params against the schema, enforces confinement, and
// turns a panic of the module into an error so one bad call cannot take the
// soul down.
func (f *fn) Apply(ctx context.Context, p map[string]any, env *module.Env) (res domain.Result, err error) {
	if env == nil {
		env = &module.Env{}
	}
	if f.schema.Unconfinable && env.Root != "" {
		return domain.Result{}, fmt.Errorf("%s cannot be confined to --root %s: it changes host-global state; run the soul without --root to use it", f.name, env.Root)
	}
	if err := module.ValidateParams(f.schema, p); err != nil {
		return domain.Result{}, fmt.Errorf("%s: %w", f.name, err)
	}
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			res, err = domain.Result{}, fmt.Errorf("%s panicked: %v\n%s", f.name, r, debug.Stack())
		}
		res.DurationMS = time.Since(start).Milliseconds()
	}()
	return f.apply(ctx, p, env)
}

func register(name string, schema module.Schema, apply applyFunc) {
	if schema.Output == nil {
		schema.Output = coreOutputs[name]
	}
	if _, ok := schema.Params["backup"]; ok {
		schema.Output = withFields(schema.Output, map[string]module.Field{"backup_file": backupOutput})
	}
	module.Register(&fn{name: name, schema: schema, apply: apply})
}

// Shorthands for schema declarations.
func str(req bool, desc string) module.Param {
	return module.Param{Type: module.TypeString, Required: req, Description: desc}
}

func typed(t module.ParamType, desc string) module.Param {
	return module.Param{Type: t, Description: desc}
}

// converged is the result of a module that found nothing to do.
func converged(msg string, data map[string]any) domain.Result {
	return domain.Result{Msg: msg, Data: data}
}

// failed is the result of a module that ran and failed.
func failed(format string, a ...any) domain.Result {
	return domain.Result{Failed: true, Msg: fmt.Sprintf(format, a...)}
}
