package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Manager runs core.cloud.created and core.cloud.absent for the engine and
// destroys an incarnation's instances (SPEC §10.6).
type Manager struct {
	Store store.Store
	// Fingerprint is the Keeper CA's, put into every join token.
	Fingerprint string
	// TLSPin is curl's --pinnedpubkey of the Keeper's certificate.
	TLSPin string
	// KeeperURL returns the https:// URL new instances reach the Keeper at.
	KeeperURL func() string
	// Local makes the driver of a local provider; nil: local providers
	// cannot run on this Keeper.
	Local func(p store.CloudProvider) (Driver, error)
	// Env opens the sealed env values of exec providers (N3).
	Env EnvSealer
	// TokenTTL is the lifetime of the one-time join tokens (1 h when zero).
	TokenTTL time.Duration
	// Poll is how often the souls' status is read while waiting (500 ms
	// when zero).
	Poll   time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now().UTC()
	}
	return time.Now().UTC()
}

func (m *Manager) tokenTTL() time.Duration {
	if m.TokenTTL > 0 {
		return m.TokenTTL
	}
	return time.Hour
}

func (m *Manager) log() *slog.Logger {
	if m.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Logger
}

// Call is one cloud module call for an incarnation.
type Call struct {
	Module      string
	Params      map[string]any
	Incarnation string
	Covens      []string
	Check       bool
}

// Outcome is a call's result and the membership change it asks for.
type Outcome struct {
	Result domain.Result
	Join   []string
	Leave  []string
}

// Run runs a core.cloud.* call.
func (m *Manager) Run(ctx context.Context, c Call) Outcome {
	var (
		out Outcome
		err error
	)
	switch c.Module {
	case "core.cloud.created":
		out, err = m.created(ctx, c)
	case "core.cloud.absent":
		out, err = m.absent(ctx, c)
	default:
		err = fmt.Errorf("unknown cloud module %s", c.Module)
	}
	if err != nil {
		out.Result.Failed, out.Result.RC = true, 1
		out.Result.Msg = strings.TrimPrefix(out.Result.Msg+"; "+err.Error(), "; ")
	}
	return out
}

// target is a call's provider, profile and driver.
type target struct {
	prov    store.CloudProvider
	prof    store.CloudProfile
	driver  Driver
	request func(op string, names []string) Request
}

func (m *Manager) target(ctx context.Context, inc, provider, profile string) (target, error) {
	var t target
	var err error
	if t.prov, err = m.Store.GetCloudProvider(ctx, provider); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return t, fmt.Errorf("cloud provider %q is not registered (soulctl cloud provider list)", provider)
		}
		return t, err
	}
	if profile != "" {
		if t.prof, err = m.Store.GetCloudProfile(ctx, profile); err != nil {
			if errors.Is(err, domain.ErrNotFound) {
				return t, fmt.Errorf("cloud profile %q is not registered (soulctl cloud profile list)", profile)
			}
			return t, err
		}
		if t.prof.Provider != provider {
			return t, fmt.Errorf("cloud profile %q belongs to provider %q, not %q", profile, t.prof.Provider, provider)
		}
	}
	if t.driver, err = m.driver(t.prov); err != nil {
		return t, err
	}
	t.request = func(op string, names []string) Request {
		return Request{Op: op, Provider: provider, Incarnation: inc, Profile: RequestProfile{Name: t.prof.Name, Spec: t.prof.Spec}, Names: names}
	}
	return t, nil
}

// driver returns the driver of provider p.
func (m *Manager) driver(p store.CloudProvider) (Driver, error) {
	switch p.Kind {
	case KindExec:
		cfg, timeout, err := ParseExec(p.Config)
		if err != nil {
			return nil, err
		}
		if cfg, err = openEnv(p.Name, cfg, m.Env); err != nil {
			return nil, err
		}
		return execDriver{name: p.Name, cfg: cfg, timeout: timeout}, nil
	case KindLocal:
		if m.Local == nil {
			return nil, fmt.Errorf("cloud provider %s is of kind local, which this Keeper cannot run", p.Name)
		}
		return m.Local(p)
	}
	return nil, fmt.Errorf("cloud provider %s has unknown kind %q", p.Name, p.Kind)
}

// params reads the common params of a cloud call.
type params struct {
	provider, profile string
	count             int
	hasCount          bool
	names             []string
}

func readParams(p map[string]any) (params, error) {
	var out params
	out.provider, _ = p["provider"].(string)
	out.profile, _ = p["profile"].(string)
	switch v := p["count"].(type) {
	case nil:
	case int64:
		out.count, out.hasCount = int(v), true
	case int:
		out.count, out.hasCount = v, true
	case float64:
		out.count, out.hasCount = int(v), v == float64(int(v))
		if !out.hasCount {
			return out, fmt.Errorf("count must be a whole number, not %v", v)
		}
	default:
		return out, fmt.Errorf("count must be an integer, not %T", v)
	}
	switch v := p["names"].(type) {
	case nil:
	case []string:
		out.names = v
	case []any:
		for _, n := range v {
			s, ok := n.(string)
			if !ok {
				return out, fmt.Errorf("names must be a list of strings, found %T", n)
			}
			out.names = append(out.names, s)
		}
	default:
		return out, fmt.Errorf("names must be a list of strings, not %T", v)
	}
	for _, n := range out.names {
		if err := CheckName("instance", n); err != nil {
			return out, err
		}
	}
	if out.provider == "" {
		return out, errors.New("provider is required")
	}
	return out, nil
}

// view is an instance as a result shows it.
func view(in store.CloudInstance) map[string]any {
	return map[string]any{"name": in.Name, "id": in.ID, "address": in.Address, "sid": in.SID, "provider": in.Provider, "profile": in.Profile}
}

func views(list []store.CloudInstance) []any {
	out := make([]any, len(list))
	for i, in := range list {
		out[i] = view(in)
	}
	return out
}

// recorded returns the instances of incarnation inc made by provider.
func (m *Manager) recorded(ctx context.Context, inc, provider string) (map[string]store.CloudInstance, error) {
	list, err := m.Store.ListCloudInstances(ctx, inc)
	if err != nil {
		return nil, err
	}
	out := map[string]store.CloudInstance{}
	for _, in := range list {
		if in.Provider == provider {
			out[in.Name] = in
		}
	}
	return out, nil
}

// wanted is the instance names a created call asks for: names as given,
// or count names "<incarnation>-<profile>-<i>" counting the instances of
// this profile already recorded (count only grows the set).
func wanted(p params, inc string, rec map[string]store.CloudInstance) ([]string, error) {
	if p.names != nil {
		return slices.Compact(slices.Sorted(slices.Values(p.names))), nil
	}
	if !p.hasCount || p.count < 0 {
		return nil, errors.New("give count (a number of instances, at least 0) or names")
	}
	var have []string
	for n, in := range rec {
		if in.Profile == p.profile {
			have = append(have, n)
		}
	}
	sort.Strings(have)
	out := slices.Clone(have)
	for i := 1; len(out) < p.count; i++ {
		n := fmt.Sprintf("%s-%s-%d", inc, p.profile, i)
		if _, taken := rec[n]; taken {
			continue
		}
		if err := CheckName("instance", n); err != nil {
			return nil, fmt.Errorf("the instance names made from incarnation %q and profile %q do not fit (%v): give names instead", inc, p.profile, err)
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// mask replaces secrets in s.
func mask(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, auth.Masked)
		}
	}
	return s
}

// parallel runs fn for every name, at most 8 at once, and returns the
// errors by name.
func parallel(names []string, fn func(name string) error) map[string]error {
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, n := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(n); err != nil {
				mu.Lock()
				errs[n] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}
