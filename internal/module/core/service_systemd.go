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
	needReload             bool
}

func (systemdManager) show(ctx context.Context, name string) (unitState, error) {
	argv := []string{"systemctl", "show", "-p", "LoadState", "-p", "ActiveState", "-p", "UnitFileState",
		"-p", "NeedDaemonReload", "--", name}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return unitState{}, fmt.Errorf("status of %s: %w", name, err)
	}
	if r.rc != 0 {
		return unitState{}, fmt.Errorf("status of %s: %w", name, cmdError(argv, r))
	}
	st := parseSystemctlShow(r.stdout)
	if st.load == "not-found" {
		return st, fmt.Errorf("service %s not found on %s: systemd has no unit %s", name, hostName(), name)
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
		case "NeedDaemonReload":
			st.needReload = v == "yes"
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

func (m systemdManager) disable(ctx context.Context, name string) error {
	return m.action(ctx, name, "disable")
}

// prepare runs `systemctl daemon-reload` when the unit changed on disk
// since systemd loaded it (NeedDaemonReload=yes): otherwise a start or
// restart would run the old definition.
func (m systemdManager) prepare(ctx context.Context, name string, check bool) (bool, error) {
	st, err := m.show(ctx, name)
	if err != nil || !st.needReload {
		return false, err
	}
	if check {
		return true, nil
	}
	argv := []string{"systemctl", "daemon-reload"}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return false, fmt.Errorf("reloading systemd for %s: %w", name, err)
	}
	if r.rc != 0 {
		return false, fmt.Errorf("reloading systemd for %s: %w", name, cmdError(argv, r))
	}
	return true, nil
}

func (m systemdManager) masked(ctx context.Context, name string) (bool, error) {
	st, err := m.show(ctx, name)
	if err != nil {
		return false, err
	}
	return st.load == "masked" || st.unitFile == "masked" || st.unitFile == "masked-runtime", nil
}

// journalLines is how much of a failed unit's journal a result carries.
const journalLines = "30"

// why returns the unit's status line and the tail of its journal.
func (systemdManager) why(ctx context.Context, name string) string {
	var b strings.Builder
	if r, err := runCmd(ctx, nil, "systemctl", "show", "-p", "Result", "-p", "ExecMainStatus", "--", name); err == nil && r.rc == 0 {
		b.WriteString(strings.ReplaceAll(strings.TrimSpace(r.stdout), "\n", ", ") + "\n")
	}
	r, err := runCmd(ctx, nil, "journalctl", "-u", name, "-n", journalLines, "--no-pager", "-q", "-o", "short-iso")
	if err == nil {
		b.WriteString(r.stdout)
	}
	return b.String()
}

// failedNow reports whether systemd gave up on the unit (ActiveState
// failed), so waiting for it to come up is pointless.
func (m systemdManager) failedNow(ctx context.Context, name string) bool {
	st, err := m.show(ctx, name)
	return err == nil && st.active == "failed"
}
