package core

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// maskedField is the output field core.service.state adds for masked:.
var maskedField = outputField(module.TypeBool, "the unit is masked (systemctl mask) afterwards; set when masked: is given")

// checkMaskedCombination refuses what a masked unit cannot do: be
// started, restarted, reloaded or enabled.
func checkMaskedCombination(masked bool, state string, hasEnabled, enabled bool) error {
	if !masked {
		return nil
	}
	if state != "" && state != "stopped" {
		return paramErr("masked", "a masked unit cannot be %s: use state: stopped (or no state) with masked: true", state)
	}
	if hasEnabled && enabled {
		return paramErr("masked", "a masked unit cannot be enabled: use enabled: false (or no enabled) with masked: true")
	}
	return nil
}

// serviceSetMasked masks (want) or unmasks the systemd unit name. Like
// Ansible's systemd module it works on a unit that is not installed yet:
// masking one links its name to /dev/null. Only a persistent mask counts
// as masked; a runtime mask (systemctl mask --runtime) is made persistent
// by masked: true and removed by masked: false.
func serviceSetMasked(ctx context.Context, name string, env *module.Env, want bool) (domain.Result, error) {
	if !systemdBooted() {
		return domain.Result{}, paramErr("masked", "masking needs systemd, and the init of %s is not systemd (SysV has no masking)", hostName())
	}
	m := systemdManager{}
	st, err := maskState(ctx, m, name)
	if err != nil {
		return domain.Result{}, err
	}
	now := st == "masked"
	data := map[string]any{"name": name, "manager": m.kind(), "masked": now}
	var argv []string
	switch {
	case want && now:
		return converged(name+" is masked", data), nil
	case want:
		argv = []string{"systemctl", "mask", "--", name}
	case st == "masked-runtime":
		argv = []string{"systemctl", "unmask", "--runtime", "--", name}
	case !now:
		return converged(name+" is not masked", data), nil
	default:
		argv = []string{"systemctl", "unmask", "--", name}
	}
	from, to, verb := "unmasked", "masked", "mask"
	if !want {
		from, to, verb = "masked", "unmasked", "unmask"
	}
	if st == "masked-runtime" {
		from = "masked-runtime"
	}
	diff := fmt.Sprintf("unit %s: %s -> %s\n", name, from, to)
	data["masked"] = want
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would " + verb + " " + name, Data: data}, nil
	}
	r, err := runCmd(ctx, nil, argv...)
	if err == nil && r.rc != 0 {
		err = cmdError(argv, r)
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("failed to %s %s on %s: %w", verb, name, hostName(), err)
	}
	if st, err = maskState(ctx, m, name); err != nil {
		return domain.Result{}, err
	}
	data["masked"] = st == "masked"
	res := domain.Result{Changed: true, Diff: diff, Msg: to + " " + name, Data: data}
	if (st == "masked") != want {
		res.Failed = true
		res.Msg = fmt.Sprintf("systemctl %s %s returned success but the unit is %s", verb, name, st)
	}
	return res, nil
}

// maskState returns "masked", "masked-runtime" or another unit file
// state of name; a unit systemd does not know is not an error here.
func maskState(ctx context.Context, m systemdManager, name string) (string, error) {
	st, err := m.show(ctx, name)
	if err != nil && st.load != "not-found" {
		return "", err
	}
	if st.unitFile == "masked" || st.unitFile == "masked-runtime" {
		return st.unitFile, nil
	}
	if st.load == "masked" {
		// A masked unit whose state systemd could not tell: ask is-enabled.
		r, err := runCmd(ctx, nil, "systemctl", "is-enabled", "--", name)
		if err != nil {
			return "", fmt.Errorf("mask state of %s: %w", name, err)
		}
		if s := strings.TrimSpace(r.stdout); s == "masked-runtime" {
			return s, nil
		}
		return "masked", nil
	}
	if st.load == "" {
		return "", errors.New("systemctl show printed no LoadState for " + name)
	}
	return st.unitFile, nil
}

// maskedThen is the check-mode result of masked: false followed by a
// state or enabled part: systemd still sees the unit masked, so those
// parts are said, not asked.
func maskedThen(r domain.Result, state string, hasEnabled, enabled bool) domain.Result {
	var then []string
	if state != "" {
		then = append(then, "make it "+state)
	}
	if hasEnabled {
		then = append(then, fmt.Sprintf("set enabled %v", enabled))
	}
	r.Msg += ", then " + strings.Join(then, " and ")
	return r
}
