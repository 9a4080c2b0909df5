// Package core implements the core.* modules of SPEC §9. Each family lives in
// its own file and registers its modules in init().
package core

import (
	"context"
	"fmt"

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
func (f *fn) Apply(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	if f.schema.Unconfinable && env != nil && env.Root != "" {
		return domain.Result{}, fmt.Errorf("%s cannot be confined to --root %s: it changes host-global state; run the soul without --root to use it", f.name, env.Root)
	}
	return f.apply(ctx, p, env)
}

func register(name string, schema module.Schema, apply applyFunc) {
	module.Register(&fn{name: name, schema: schema, apply: apply})
}

func notImplemented(name string) applyFunc {
	return func(context.Context, map[string]any, *module.Env) (domain.Result, error) {
		return domain.Result{}, fmt.Errorf("module %s is not implemented yet", name)
	}
}

// Shorthands for schema declarations.
func str(req bool, desc string) module.Param {
	return module.Param{Type: module.TypeString, Required: req, Description: desc}
}

func typed(t module.ParamType, desc string) module.Param {
	return module.Param{Type: t, Description: desc}
}
