package core

import (
	"context"
	"fmt"
	"strings"
)

// systemdManager drives systemctl when PID 1 is systemd.
type systemdManager struct{}

func (systemdManager) kind() string { return "systemd" }

// unitState is the part of `systemctl show` the modules need.
type unitState struct {
	load, active, unitFile string
}

func (systemdManager) show(ctx context.Context, name string) (unitState, error) {
	argv := []string{"systemctl", "show", "-p", "LoadState", "-p", "ActiveState", "-p", "UnitFileState", "--", name}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return unitState{}, fmt.Errorf("status of %s: %w", name, err)
	}
	if r.rc != 0 {
		return unitState{}, fmt.Errorf("status of %s: %w", name, cmdError(argv, r))
	}
	st := parseSystemctlShow(r.stdout)
	if st.load == "not-found" {
		return st, fmt.Errorf("service %s not found: systemd has no unit %s", name, name)
	}
	return st, nil
}

func parseSystemctlShow(out string) unitState {
	var st unitState
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "LoadState":
			st.load = v
		case "ActiveState":
			st.active = v
		case "UnitFileState":
			st.unitFile = v
		}
	}
	return st
}

func (m systemdManager) active(ctx context.Context, name string) (bool, error) {
	st, err := m.show(ctx, name)
	if err != nil {
		return false, err
	}
	switch st.active {
	case "active", "reloading", "activating":
		return true, nil
	}
	return false, nil
}

func (systemdManager) action(ctx context.Context, name, verb string) error {
	argv := []string{"systemctl", verb, "--", name}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	if r.rc != 0 {
		return fmt.Errorf("%s %s: %w", verb, name, cmdError(argv, r))
	}
	return nil
}

// enabled treats units that cannot be enabled by hand (static, generated,
// indirect) as converged: there is nothing systemctl enable could change.
func (m systemdManager) enabled(ctx context.Context, name string) (bool, error) {
	st, err := m.show(ctx, name)
	if err != nil {
		return false, err
	}
	switch st.unitFile {
	case "enabled", "alias", "static", "indirect", "generated":
		return true, nil
	}
	return false, nil
}

func (m systemdManager) enable(ctx context.Context, name string) error {
	return m.action(ctx, name, "enable")
}
