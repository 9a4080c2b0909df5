package core

import (
	"context"
	"fmt"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// registerNamed registers a module whose errors name the module and the
// host they happened on ("core.cron.present on web-1: param \"schedule\": …"),
// so a failure in a run over many hosts reads on its own.
func registerNamed(name string, schema module.Schema, apply applyFunc) {
	register(name, schema, func(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
		res, err := apply(ctx, p, env)
		if err != nil {
			return res, fmt.Errorf("%s on %s: %w", name, hostName(), err)
		}
		return res, nil
	})
}

// paramErr is the error of a bad value of one param.
func paramErr(param, format string, a ...any) error {
	return fmt.Errorf("param %q: %s", param, fmt.Sprintf(format, a...))
}
