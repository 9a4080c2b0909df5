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
	registerNamed("core.service.state", module.Schema{
		Summary: "Bring a service to a state (started, stopped, restarted, reloaded), enable or disable it at boot, and/or mask or unmask its systemd unit",
		Params: map[string]module.Param{
			"name":    name,
			"state":   str(false, "started, stopped, restarted or reloaded"),
			"enabled": typed(module.TypeBool, "start at boot (true) or not (false)"),
			"masked": typed(module.TypeBool, "systemd only: mask the unit (true: it cannot be started at all) or unmask it (false); "+
				"unmasking comes before state and enabled, masking after them (so stopped, then masked); "+
				"masked: true refuses state started/restarted/reloaded and enabled: true"),
		},
		AtLeastOne:   [][]string{{"state", "enabled", "masked"}},
		Unconfinable: true,
		Output:       withFields(serviceOutput, map[string]module.Field{"masked": maskedField}),
	}, serviceState)
}

// serviceStates are core.service.state's states and what does each.
var serviceStates = map[string]applyFunc{
	"started":   serviceRunning,
	"stopped":   serviceStopped,
	"restarted": serviceRestarted,
	"reloaded":  serviceReloaded,
}

// serviceState runs the unmask part (masked: false), the state part, the
// enabled part, then the mask part (masked: true), as Ansible's systemd
// module allows: unmask before a start, mask after a stop. A failed part
// stops there. The result is changed when any part changed.
func serviceState(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	state := a.str("state")
	hasEnabled := a.has("enabled")
	enabled := a.boolean("enabled", false)
	hasMasked := a.has("masked")
	masked := a.boolean("masked", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if hasMasked {
		if err := checkMaskedCombination(masked, state, hasEnabled, enabled); err != nil {
			return domain.Result{}, err
		}
		if !systemdBooted() {
			return domain.Result{}, paramErr("masked", "masking needs systemd, and the init of %s is not systemd (SysV has no masking)", hostName())
		}
	}
	call := map[string]any{"name": p["name"]}
	var parts []domain.Result
	if state != "" {
		if _, ok := serviceStates[state]; !ok {
			return domain.Result{}, fmt.Errorf("state %q: want started, stopped, restarted or reloaded", state)
		}
	}
	if hasMasked && !masked {
		name, _ := p["name"].(string)
		r, err := serviceSetMasked(ctx, name, env, false)
		if err != nil || r.Failed {
			return r, err
		}
		if env.Check && r.Changed && (state != "" || hasEnabled) {
			return maskedThen(r, state, hasEnabled, enabled), nil
		}
		parts = append(parts, r)
	}
	if state != "" {
		r, err := serviceStates[state](ctx, call, env)
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
		if r.Failed && hasMasked && masked {
			return r, nil
		}
		parts = append(parts, r)
	}
	if hasMasked && masked {
		name, _ := p["name"].(string)
		r, err := serviceSetMasked(ctx, name, env, true)
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
