package core

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	ops := map[string]applyFunc{
		"running":   serviceRunning,
		"stopped":   serviceStopped,
		"restarted": serviceRestarted,
		"reloaded":  serviceReloaded,
		"enabled":   serviceEnabled,
	}
	summaries := map[string]string{
		"running":   "Ensure a service is running (systemd, or an /etc/init.d script)",
		"stopped":   "Ensure a service is stopped",
		"restarted": "Restart a service (start it if stopped); always changes",
		"reloaded":  "Reload a service's configuration (start it if stopped); always changes",
		"enabled":   "Ensure a service starts at boot",
	}
	for op, apply := range ops {
		register("core.service."+op, module.Schema{
			Summary:      summaries[op],
			Params:       map[string]module.Param{"name": str(true, "service name (systemd unit or /etc/init.d script)")},
			Unconfinable: true,
		}, apply)
	}
}

// serviceManager is one init system. Actions return an error naming the
// command and its output when the init system refuses.
type serviceManager interface {
	kind() string
	// active reports whether the service runs; a service the init system
	// does not know is an error.
	active(ctx context.Context, name string) (bool, error)
	// action runs start, stop, restart or reload.
	action(ctx context.Context, name, verb string) error
	enabled(ctx context.Context, name string) (bool, error)
	enable(ctx context.Context, name string) error
}

var serviceNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@:._+-]*$`)

// systemdBooted reports whether PID 1 is systemd (sd_booted(3)).
func systemdBooted() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

func pickServiceManager() serviceManager {
	if systemdBooted() {
		return systemdManager{}
	}
	return sysvManager{dir: "/etc/init.d", rcDir: "/etc"}
}

// serviceSettle is how long a service may take, after its init system
// reported success, to show the state it was asked for: a SysV script
// returns once the daemon has forked, and a daemon such as redis-server
// writes its pidfile only after initializing, so an immediate status check
// can see the empty pidfile the script created and report it stopped.
const serviceSettle = 10 * time.Second

// settle polls the service's state until it is want or within has passed,
// and returns the last state seen.
func settle(ctx context.Context, m serviceManager, name string, want bool, within time.Duration) (bool, error) {
	deadline := time.Now().Add(within)
	for {
		now, err := m.active(ctx, name)
		if err != nil || now == want || !time.Now().Before(deadline) {
			return now, err
		}
		select {
		case <-ctx.Done():
			return now, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serviceCall is the common start of every core.service.* call.
func serviceCall(ctx context.Context, p map[string]any) (serviceManager, string, bool, error) {
	a := newArgs(p)
	name := a.str("name")
	if a.err != nil {
		return nil, "", false, a.err
	}
	if !serviceNameRe.MatchString(name) {
		return nil, "", false, fmt.Errorf("%q is not a valid service name", name)
	}
	m := pickServiceManager()
	up, err := m.active(ctx, name)
	return m, name, up, err
}

func serviceData(m serviceManager, name string, up bool) map[string]any {
	state := "stopped"
	if up {
		state = "running"
	}
	return map[string]any{"name": name, "state": state, "manager": m.kind()}
}

// serviceTo converges a service to running (want true) or stopped and
// checks that the init system got it there.
func serviceTo(ctx context.Context, p map[string]any, env *module.Env, want bool) (domain.Result, error) {
	m, name, up, err := serviceCall(ctx, p)
	if err != nil {
		return domain.Result{}, err
	}
	verb, state := "stop", "stopped"
	if want {
		verb, state = "start", "running"
	}
	if up == want {
		return converged(name+" is "+state, serviceData(m, name, up)), nil
	}
	diff := fmt.Sprintf("service %s: %s -> %s\n", name, serviceData(m, name, up)["state"], state)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would " + verb + " " + name, Data: serviceData(m, name, want)}, nil
	}
	if err := m.action(ctx, name, verb); err != nil {
		return domain.Result{}, err
	}
	now, err := settle(ctx, m, name, want, serviceSettle)
	if err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diff, Msg: verb + " " + name, Data: serviceData(m, name, now)}
	if now != want {
		res.Failed = true
		res.Msg = fmt.Sprintf("%s %s returned success but the service is not %s", verb, name, state)
	}
	return res, nil
}

func serviceRunning(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	return serviceTo(ctx, p, env, true)
}

func serviceStopped(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	return serviceTo(ctx, p, env, false)
}

// serviceRestarted always restarts (and so always changes); a stopped
// service is started.
func serviceRestarted(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	m, name, up, err := serviceCall(ctx, p)
	if err != nil {
		return domain.Result{}, err
	}
	verb := "restart"
	if !up {
		verb = "start"
	}
	return serviceAction(ctx, env, m, name, verb)
}

// serviceReloaded asks a running service to reload its configuration and
// starts a stopped one (a reload of a stopped service would do nothing).
func serviceReloaded(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	m, name, up, err := serviceCall(ctx, p)
	if err != nil {
		return domain.Result{}, err
	}
	verb := "reload"
	if !up {
		verb = "start"
	}
	return serviceAction(ctx, env, m, name, verb)
}

func serviceAction(ctx context.Context, env *module.Env, m serviceManager, name, verb string) (domain.Result, error) {
	diff := fmt.Sprintf("service %s: %s\n", name, verb)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would " + verb + " " + name, Data: serviceData(m, name, true)}, nil
	}
	if err := m.action(ctx, name, verb); err != nil {
		return domain.Result{}, err
	}
	up, err := settle(ctx, m, name, true, serviceSettle)
	if err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diff, Msg: verb + " " + name, Data: serviceData(m, name, up)}
	if !up {
		res.Failed = true
		res.Msg = fmt.Sprintf("%s %s returned success but the service is not running", verb, name)
	}
	return res, nil
}

// serviceEnabled makes the service start at boot. It does not start it.
func serviceEnabled(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	m, name, up, err := serviceCall(ctx, p)
	if err != nil {
		return domain.Result{}, err
	}
	data := serviceData(m, name, up)
	on, err := m.enabled(ctx, name)
	if err != nil {
		return domain.Result{}, err
	}
	data["enabled"] = on
	if on {
		return converged(name+" is enabled", data), nil
	}
	diff := fmt.Sprintf("service %s: disabled -> enabled\n", name)
	if env.Check {
		data["enabled"] = true
		return domain.Result{Changed: true, Diff: diff, Msg: "would enable " + name, Data: data}, nil
	}
	if err := m.enable(ctx, name); err != nil {
		return domain.Result{}, err
	}
	if on, err = m.enabled(ctx, name); err != nil {
		return domain.Result{}, err
	}
	data["enabled"] = on
	res := domain.Result{Changed: true, Diff: diff, Msg: "enabled " + name, Data: data}
	if !on {
		res.Failed = true
		res.Msg = fmt.Sprintf("enabling %s returned success but it is still not enabled", name)
	}
	return res, nil
}
