package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
)

// EnvSealer seals and opens the env values of exec providers (their
// platform API tokens): the database only ever holds them sealed (audit
// finding N3). *secrets.Store implements it.
type EnvSealer interface {
	SealProviderEnv(provider, key, value string) (string, error)
	OpenProviderEnv(provider, key, sealed string) (string, error)
}

var _ EnvSealer = (*secrets.Store)(nil)

// envOf returns the env map of a provider config (nil when none).
func envOf(cfg map[string]any) map[string]any {
	env, _ := cfg["env"].(map[string]any)
	return env
}

// SealProvider returns p with every env value sealed, ready to store. An
// env value given as **** (what every response shows) keeps the value old
// (the stored provider of that name, nil when new) has for that variable,
// so a shown config can be sent back unchanged; **** for a variable old
// does not have is an error.
func SealProvider(p store.CloudProvider, old *store.CloudProvider, s EnvSealer) (store.CloudProvider, error) {
	env := envOf(p.Config)
	if len(env) == 0 {
		return p, nil
	}
	var oldEnv map[string]any
	if old != nil {
		oldEnv = envOf(old.Config)
	}
	sealed := make(map[string]any, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v, ok := env[k].(string)
		if !ok {
			return p, fmt.Errorf("exec provider config: env %s must be a string, not %T", k, env[k])
		}
		switch {
		case v == auth.Masked:
			prev, _ := oldEnv[k].(string)
			if prev == "" {
				return p, fmt.Errorf("exec provider config: env %s is %s, which keeps a stored value, but provider %s has none for it: give the value", k, auth.Masked, p.Name)
			}
			if !secrets.IsSealedEnv(prev) {
				var err error
				if prev, err = s.SealProviderEnv(p.Name, k, prev); err != nil {
					return p, err
				}
			}
			sealed[k] = prev
		default:
			out, err := s.SealProviderEnv(p.Name, k, v)
			if err != nil {
				return p, err
			}
			sealed[k] = out
		}
	}
	cfg := maps.Clone(p.Config)
	cfg["env"] = sealed
	p.Config = cfg
	return p, nil
}

// openEnv returns c with its env values opened. A value that is not
// sealed (a provider stored before sealing, not yet sealed by
// SealStoredProviders) is used as it is.
func openEnv(provider string, c ExecConfig, s EnvSealer) (ExecConfig, error) {
	if len(c.Env) == 0 {
		return c, nil
	}
	env := make(map[string]string, len(c.Env))
	for k, v := range c.Env {
		if !secrets.IsSealedEnv(v) {
			env[k] = v
			continue
		}
		if s == nil {
			return c, fmt.Errorf("cloud provider %s: env %s is sealed and this keeper has no secrets key to open it", provider, k)
		}
		open, err := s.OpenProviderEnv(provider, k, v)
		if err != nil {
			return c, err
		}
		env[k] = open
	}
	c.Env = env
	return c, nil
}

// SealStoredProviders seals the env values that providers stored before
// sealing existed still hold in plain text (the Keeper runs it at start).
// It returns the names of the providers it rewrote.
func SealStoredProviders(ctx context.Context, st store.Store, s EnvSealer) ([]string, error) {
	list, err := st.ListCloudProviders(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing cloud providers: %w", err)
	}
	var sealed []string
	for _, p := range list {
		env := envOf(p.Config)
		plain := false
		for _, v := range env {
			if sv, ok := v.(string); ok && !secrets.IsSealedEnv(sv) {
				plain = true
			}
		}
		if !plain {
			continue
		}
		cfg := maps.Clone(p.Config)
		out := make(map[string]any, len(env))
		for k, v := range env {
			sv, ok := v.(string)
			if !ok || secrets.IsSealedEnv(sv) {
				out[k] = v
				continue
			}
			if out[k], err = s.SealProviderEnv(p.Name, k, sv); err != nil {
				return sealed, err
			}
		}
		cfg["env"] = out
		p.Config = cfg
		if err := st.PutCloudProvider(ctx, p); err != nil {
			return sealed, fmt.Errorf("sealing env of cloud provider %s: %w", p.Name, err)
		}
		sealed = append(sealed, p.Name)
	}
	return sealed, nil
}
