package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/textutil"
)

// checkCovens refuses a run whose scenario names in on: or delegate: a
// coven that nothing knows — no soul in the registry carries it, no
// unexpired, unrevoked join token grants it, no cloud profile makes souls
// with it, and the incarnation was not created with it (SPEC §6 decision):
// a typo until proven otherwise. A known coven with no member in this
// incarnation is fine: that step targets no host.
func (e *Engine) checkCovens(ctx context.Context, sc *dsl.Scenario, incCovens []string) error {
	type use struct {
		coven string
		pos   dsl.Pos
	}
	var uses []use
	var walk func([]*dsl.Task)
	walk = func(ts []*dsl.Task) {
		for _, t := range ts {
			if t.On != nil {
				for i, c := range t.On.Covens {
					pos := t.On.Pos
					if i < len(t.On.CovenPos) {
						pos = t.On.CovenPos[i]
					}
					uses = append(uses, use{c, pos})
				}
			}
			if t.Delegate != nil {
				for i, c := range t.Delegate.Covens {
					uses = append(uses, use{c, t.Delegate.CovenPos[i]})
				}
			}
			walk(t.Block)
		}
	}
	walk(sc.Tasks)
	if len(uses) == 0 {
		return nil
	}
	known, err := e.knownCovens(ctx, incCovens)
	if err != nil {
		return err
	}
	var problems []string
	for _, u := range uses {
		if slices.Contains(known, u.coven) {
			continue
		}
		problems = append(problems, fmt.Sprintf("unknown coven %q in %s%s: no soul, unexpired join token, cloud profile or incarnation carries it", u.coven, u.pos, textutil.Suggest(u.coven, known)))
	}
	if len(problems) == 0 {
		return nil
	}
	return domain.Errorf(domain.CodeUnprocessable, "%s", strings.Join(problems, "; "))
}

// knownCovens lists every coven the Keeper knows of, sorted.
func (e *Engine) knownCovens(ctx context.Context, incCovens []string) ([]string, error) {
	set := map[string]bool{}
	for _, c := range incCovens {
		set[c] = true
	}
	// The souls' covens from the coven index, without reading (and
	// decoding) every soul's soulprint; only a list that may be cut at
	// MaxPageLimit sends us to the souls themselves.
	carried, err := e.cfg.Store.ListCovens(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing covens: %w", err)
	}
	if len(carried) >= store.MaxPageLimit {
		souls, err := e.cfg.Store.ListSouls(ctx, store.SoulFilter{})
		if err != nil {
			return nil, fmt.Errorf("listing souls: %w", err)
		}
		carried = carried[:0]
		for _, s := range souls {
			carried = append(carried, s.Covens...)
		}
	}
	for _, c := range carried {
		set[c] = true
	}
	toks, err := e.cfg.Store.ListJoinTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing join tokens: %w", err)
	}
	now := e.now()
	for _, t := range toks {
		if t.RevokedAt != nil || !t.ExpiresAt.After(now) || (t.MaxUses > 0 && t.Uses >= t.MaxUses) {
			continue
		}
		for _, c := range t.Covens {
			set[c] = true
		}
	}
	profiles, err := e.cfg.Store.ListCloudProfiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing cloud profiles: %w", err)
	}
	for _, p := range profiles {
		for _, c := range p.Covens {
			set[c] = true
		}
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}
