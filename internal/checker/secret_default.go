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

// checkSecretRefs is the launch's validation of {{ secret("name") }}: every
// secret the procedure reads is in the store.
func (c *Checker) checkSecretRefs(ctx context.Context, p *Procedure) error {
	for _, n := range p.Secrets {
		if _, err := c.secretValue(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func (c *Checker) secretValue(ctx context.Context, name string) (string, error) {
	if c.secrets == nil {
		return "", domain.Errorf(domain.CodeInvalid, "secret(%q): this keeper has no secret store", name)
	}
	v, err := c.secrets.Value(ctx, name)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return "", domain.Errorf(domain.CodeInvalid, "secret(%q) is not in the Keeper's secret store (soulctl secret set %s)", name, name)
	}
	if err != nil {
		return "", fmt.Errorf("secret(%q): %w", name, err)
	}
	return v, nil
}

// loadSecrets reads the store secrets the procedure's templates use when
// the task starts (a task keeps the values it started with; a new value
// takes effect for tasks that start later). They are masked like secret
// vars and never stored.
func (r *run) loadSecrets() error {
	for _, n := range r.proc.Secrets {
		v, err := r.c.secretValue(r.ctx, n)
		if err != nil {
			return err
		}
		r.vars[secretRefPrefix+n] = v
		if !r.secretSeen[v] {
			if r.secretSeen == nil {
				r.secretSeen = map[string]bool{}
			}
			r.secretSeen[v] = true
			r.secrets = append(r.secrets, v)
		}
	}
	return nil
}
