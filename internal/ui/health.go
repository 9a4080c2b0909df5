package ui

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/healthkeeper"
)

// staleAfter is how long a silent host shows its last health status.
func (u *UI) staleAfter() time.Duration {
	if u.cfg.HealthStaleAfter > 0 {
		return u.cfg.HealthStaleAfter
	}
	return healthkeeper.DefaultStaleAfter
}

// incarnationHealth is the health panel's data: per check the hosts by
// status (SPEC §14.1); nil when no check reported.
func (u *UI) incarnationHealth(ctx context.Context, name string) (*apitypes.IncarnationHealth, error) {
	states, err := u.store.ListHealthStates(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("health of %s: %w", name, err)
	}
	if len(states) == 0 {
		return nil, nil
	}
	trans, err := u.store.ListHealthTransitions(ctx, name, 10)
	if err != nil {
		return nil, fmt.Errorf("health transitions of %s: %w", name, err)
	}
	h := healthkeeper.View(name, states, trans, u.now(), u.staleAfter())
	return &h, nil
}

// healthOverview is the dashboard's health table: incarnations with
// anything not OK first.
func (u *UI) healthOverview(ctx context.Context) (apitypes.HealthOverview, error) {
	states, err := u.store.ListHealthStates(ctx, "")
	if err != nil {
		return apitypes.HealthOverview{}, fmt.Errorf("health overview: %w", err)
	}
	return healthkeeper.Overview(states, u.now(), u.staleAfter()), nil
}

// soulVitals is the soul page's vital signs; nil before the first report.
func (u *UI) soulVitals(ctx context.Context, sid string) (*apitypes.SoulVitals, error) {
	vs, err := u.store.ListVitals(ctx, []string{sid})
	if err != nil {
		return nil, fmt.Errorf("vital signs of %s: %w", sid, err)
	}
	if len(vs) == 0 {
		return nil, nil
	}
	at := vs[0].At
	return &apitypes.SoulVitals{SID: sid, Vitals: vs[0].Vitals, At: &at}, nil
}
