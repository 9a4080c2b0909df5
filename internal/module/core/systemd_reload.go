package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.systemd.daemon_reloaded", module.Schema{
		Summary: "Reload systemd's unit files (systemctl daemon-reload) with no unit named, as Ansible's systemd daemon_reload: true alone; changed when a loaded unit's file changed on disk",
		Params: map[string]module.Param{
			"force": {Type: module.TypeBool, Default: false, Description: "reload even when no loaded unit changed on disk (a unit file only added, or a drop-in systemd does not track); reports changed"},
		},
		Unconfinable: true,
		Output:       map[string]module.Field{},
	}, systemdDaemonReloaded)
}

// systemdDaemonReloaded reloads systemd when a loaded unit changed on disk
// (NeedDaemonReload=yes on any unit), and reports those units. Unlike
// Ansible, which always reloads and reports ok, a converged host is left
// alone, and a reload that mattered shows as a change.
func systemdDaemonReloaded(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	force := a.boolean("force", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return domain.Result{}, errors.New("systemd is not the init system of this host (no /run/systemd/system)")
	}
	argv := []string{"systemctl", "show", "--all", "--property=Id,NeedDaemonReload", "*"}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return domain.Result{}, err
	}
	if r.rc != 0 {
		return domain.Result{}, cmdError(argv, r)
	}
	stale := staleUnits(r.stdout)
	data := map[string]any{"units": stale}
	if len(stale) == 0 && !force {
		return converged("no loaded unit changed on disk", data), nil
	}
	msg := "reload systemd (forced)"
	if len(stale) > 0 {
		msg = "reload systemd: changed on disk: " + strings.Join(stale, ", ")
	}
	if env.Check {
		return domain.Result{Changed: true, Msg: "would " + msg, Diff: "systemctl daemon-reload\n", Data: data}, nil
	}
	reload := []string{"systemctl", "daemon-reload"}
	r, err = runCmd(ctx, nil, reload...)
	if err != nil {
		return domain.Result{}, err
	}
	if r.rc != 0 {
		return domain.Result{}, fmt.Errorf("reloading systemd: %w", cmdError(reload, r))
	}
	return domain.Result{Changed: true, Msg: msg, Diff: "systemctl daemon-reload\n", Data: data}, nil
}

// staleUnits reads `systemctl show -p Id,NeedDaemonReload` output (one
// blank-line separated block per unit) and returns the units that need a
// reload, sorted.
func staleUnits(out string) []string {
	stale := []string{}
	for _, block := range strings.Split(out, "\n\n") {
		var id string
		need := false
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, "=")
			switch k {
			case "Id":
				id = v
			case "NeedDaemonReload":
				need = v == "yes"
			}
		}
		if need && id != "" {
			stale = append(stale, id)
		}
	}
	sort.Strings(stale)
	return stale
}
