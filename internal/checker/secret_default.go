package checker

import (
	"context"
	"fmt"

	"github.com/soulstack/soulstack/internal/domain"
)

// SecretSource gives the values of the Keeper's secret store
// (internal/secrets.Store).
type SecretSource interface {
	Value(ctx context.Context, name string) (string, error)
}

// secretDefaults fills, in each launch's vars, the secret vars not given
// at launch from the store secret their default_secret names.
func (c *Checker) secretDefaults(ctx context.Context, p *Procedure, sets []map[string]any) error {
	for _, d := range p.Vars {
		if d.DefaultSecret == "" {
			continue
		}
		var val string
		loaded := false
		for _, set := range sets {
			if _, given := set[d.Name]; given {
				continue
			}
			if !loaded {
				if c.secrets == nil {
					return domain.Errorf(domain.CodeInvalid, "var %q: default_secret %s: this keeper has no secret store", d.Name, d.DefaultSecret)
				}
				v, err := c.secrets.Value(ctx, d.DefaultSecret)
				if domain.ErrorCode(err) == domain.CodeNotFound {
					return domain.Errorf(domain.CodeInvalid, "var %q: default_secret %q is not in the Keeper's secret store (soulctl secret set %s)", d.Name, d.DefaultSecret, d.DefaultSecret)
				}
				if err != nil {
					return fmt.Errorf("var %q: default_secret %s: %w", d.Name, d.DefaultSecret, err)
				}
				val, loaded = v, true
			}
			set[d.Name] = val
		}
	}
	return nil
}
