package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.service.facts", module.Schema{
		Summary:  "List the host's services and their states (read-only probe), as Ansible's service_facts: register it and read register.x.services['nginx.service'].state",
		Params:   map[string]module.Param{},
		ReadOnly: true,
		Output: map[string]module.Field{
			"services": outputField(module.TypeMap, "by unit name (nginx.service): name, state (running, stopped, or for a unit systemd has not loaded: inactive), status (enabled, disabled, static, masked, … from its unit file; unknown without one) and source (systemd)"),
		},
		Unconfinable: true,
	}, serviceFacts)
}

func serviceFacts(ctx context.Context, _ map[string]any, _ *module.Env) (domain.Result, error) {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return domain.Result{}, errors.New("core.service.facts reads systemd; systemd is not the init system of this host")
	}
	units := []string{"systemctl", "list-units", "--type=service", "--all", "--no-legend", "--plain", "--no-pager"}
	r, err := runCmd(ctx, nil, units...)
	if err != nil || r.rc != 0 {
		return domain.Result{}, fmt.Errorf("listing services: %w", errOr(err, cmdError(units, r)))
	}
	files := []string{"systemctl", "list-unit-files", "--type=service", "--no-legend", "--plain", "--no-pager"}
	rf, err := runCmd(ctx, nil, files...)
	if err != nil || rf.rc != 0 {
		return domain.Result{}, fmt.Errorf("listing unit files: %w", errOr(err, cmdError(files, rf)))
	}
	services := parseServiceFacts(r.stdout, rf.stdout)
	return domain.Result{Msg: fmt.Sprintf("%d services", len(services)), Data: map[string]any{"services": services}}, nil
}

// parseServiceFacts builds service_facts' map from `systemctl list-units`
// (UNIT LOAD ACTIVE SUB DESCRIPTION) and `list-unit-files` (UNIT STATE
// [PRESET]) output: state is running when SUB is, else stopped; a unit
// file systemd has not loaded is inactive.
func parseServiceFacts(units, files string) map[string]any {
	out := map[string]any{}
	for _, line := range strings.Split(units, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "● "))
		if len(f) < 4 || !strings.HasSuffix(f[0], ".service") || f[1] == "not-found" {
			continue
		}
		state := "stopped"
		if f[3] == "running" {
			state = "running"
		}
		out[f[0]] = map[string]any{"name": f[0], "state": state, "status": "unknown", "source": "systemd"}
	}
	for _, line := range strings.Split(files, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ".service") || strings.HasSuffix(f[0], "@.service") {
			continue
		}
		if s, ok := out[f[0]].(map[string]any); ok {
			s["status"] = f[1]
			continue
		}
		out[f[0]] = map[string]any{"name": f[0], "state": "inactive", "status": f[1], "source": "systemd"}
	}
	return out
}
