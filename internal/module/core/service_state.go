package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	name := str(true, "service name (systemd unit or /etc/init.d script)")
	name.Check = checkServiceName
	register("core.service.state", module.Schema{
		Summary: "Bring a service to a state (started, stopped, restarted, reloaded) and/or enable or disable it at boot",
		Params: map[string]module.Param{
			"name":    name,
			"state":   str(false, "started, stopped, restarted or reloaded"),
			"enabled": typed(module.TypeBool, "start at boot (true) or not (false)"),
		},
		AtLeastOne:   [][]string{{"state", "enabled"}},
		Unconfinable: true,
	}, serviceState)
}

// serviceStates are core.service.state's states and what does each.
var serviceStates = map[string]applyFunc{
	"started":   serviceRunning,
	"stopped":   serviceStopped,
	"restarted": serviceRestarted,
	"reloaded":  serviceReloaded,
}

// serviceState runs the state part, then the enabled part; a failed state
// part stops there. The result is changed when either part changed.
func serviceState(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	state := a.str("state")
	hasEnabled := a.has("enabled")
	enabled := a.boolean("enabled", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	call := map[string]any{"name": p["name"]}
	var parts []domain.Result
	if state != "" {
		apply, ok := serviceStates[state]
		if !ok {
			return domain.Result{}, fmt.Errorf("state %q: want started, stopped, restarted or reloaded", state)
		}
		r, err := apply(ctx, call, env)
		if err != nil || r.Failed {
			return r, err
		}
		parts = append(parts, r)
	}
	if hasEnabled {
		r, err := serviceSetEnabled(ctx, call, env, enabled)
		if err != nil {
			return domain.Result{}, err
		}
		parts = append(parts, r)
	}
	out := domain.Result{Data: map[string]any{}}
	var msgs []string
	for _, r := range parts {
		out.Changed = out.Changed || r.Changed
		out.Failed = out.Failed || r.Failed
		out.Diff += r.Diff
		out.Stderr += r.Stderr
		msgs = append(msgs, r.Msg)
		for k, v := range r.Data {
			out.Data[k] = v
		}
	}
	out.Msg = strings.Join(msgs, "; ")
	return out, nil
}
