package ui

import (
	"fmt"
	"net/http"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// rulesView is the data of the rules page (SPEC §17): the recent
// decisions of every rule, the paused rules, and for admins the
// notifications that ran out of attempts.
type rulesView struct {
	Firings     []store.Firing
	Paused      []store.RulePause
	Dead        []store.Delivery
	ShowDead    bool
	RuleFilter  string
	NextBefore  int64
	HasFirings  bool
	DeadChecked bool
}

func (u *UI) rulesPage(r *http.Request) (view, error) {
	ctx := r.Context()
	rv := rulesView{RuleFilter: r.URL.Query().Get("rule")}
	var err error
	if rv.Firings, err = u.store.ListFirings(ctx, store.FiringFilter{Rule: rv.RuleFilter, Limit: 100}); err != nil {
		return view{}, fmt.Errorf("listing rule decisions: %w", err)
	}
	rv.HasFirings = len(rv.Firings) > 0
	if rv.Paused, err = u.store.ListRulePauses(ctx); err != nil {
		return view{}, fmt.Errorf("listing paused rules: %w", err)
	}
	if p, ok := auth.FromContext(ctx); ok && (p.Role.Allows(auth.RoleAdmin) && u.access(r) == nil || u.may(r, auth.PermManageKeeper, auth.Keeper())) {
		rv.ShowDead = true
		if rv.Dead, err = u.store.ListDeliveries(ctx, store.DeliveryDead, 100); err != nil {
			return view{}, fmt.Errorf("listing dead letters: %w", err)
		}
	}
	return view{Template: "rules", Title: "Rules", Nav: "rules", Data: rv}, nil
}
