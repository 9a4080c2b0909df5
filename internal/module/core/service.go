package core

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
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
		name := str(true, "service name (systemd unit or /etc/init.d script)")
		name.Check = checkServiceName
		register("core.service."+op, module.Schema{
			Summary:      summaries[op],
			Params:       map[string]module.Param{"name": name},
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
	disable(ctx context.Context, name string) error
	// prepare is called before anything else: systemd reloads its unit
	// files when the unit changed on disk (not in check mode); reloaded
	// says whether it did or, in check mode, would.
	prepare(ctx context.Context, name string, check bool) (reloaded bool, err error)
	// masked reports whether the service may not be started at all.
	masked(ctx context.Context, name string) (bool, error)
	// why returns what the init system logged about the service lately
	// (the journal's tail), for a service that failed to start.
	why(ctx context.Context, name string) string
}

var serviceNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@:._+-]*$`)

// checkServiceName refuses names that could be read as an option, a path
// or shell syntax; the DSL checks literal names with it at load time.
func checkServiceName(name string) error {
	if !serviceNameRe.MatchString(name) || strings.Contains(name, "..") || len(name) > 256 {
		return fmt.Errorf("%q is not a valid service name (letters, digits and @:._+- only, no \"..\")", name)
	}
	return nil
}

// hostName is the host's name for error messages.
func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return "this host"
	}
	return h
}

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
		// A unit systemd marked failed will not come up by waiting.
		if f, ok := m.(interface {
			failedNow(context.Context, string) bool
		}); ok && want && f.failedNow(ctx, name) {
			return now, nil
		}
		select {
		case <-ctx.Done():
			return now, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// svcCall is one core.service.* call under way.
type svcCall struct {
	m        serviceManager
	name     string
	up       bool
	reloaded bool // the unit files were (check: would be) reloaded first
}

// serviceCall is the common start of every core.service.* call.
func serviceCall(ctx context.Context, p map[string]any, env *module.Env) (*svcCall, error) {
	a := newArgs(p)
	name := a.str("name")
	if a.err != nil {
		return nil, a.err
	}
	if err := checkServiceName(name); err != nil {
		return nil, err
	}
	s := &svcCall{m: pickServiceManager(), name: name}
	var err error
	if s.reloaded, err = s.m.prepare(ctx, name, env.Check); err != nil {
		return nil, err
	}
	s.up, err = s.m.active(ctx, name)
	return s, err
}

func (s *svcCall) data(up bool) map[string]any {
	state := "stopped"
	if up {
		state = "running"
	}
	d := map[string]any{"name": s.name, "state": state, "manager": s.m.kind()}
	if s.reloaded {
		d["daemon_reload"] = true
	}
	return d
}

// refuseMasked fails a call that would start a masked unit.
func (s *svcCall) refuseMasked(ctx context.Context, verb string) (domain.Result, bool, error) {
	masked, err := s.m.masked(ctx, s.name)
	if err != nil || !masked {
		return domain.Result{}, false, err
	}
	r := failed("cannot %s %s on %s: the unit is masked (systemctl unmask %s first)", verb, s.name, hostName(), s.name)
	r.Data = s.data(s.up)
	return r, true, nil
}

// failedStart is the result of a start, restart or reload the init system
// refused or that did not leave the service running: its message, and
// what the init system logged about the service in stderr.
func (s *svcCall) failedStart(ctx context.Context, msg, diff string, up bool) domain.Result {
	r := domain.Result{Failed: true, Changed: true, Msg: msg + " on " + hostName(), Diff: diff, Data: s.data(up)}
	r.Stderr = s.m.why(ctx, s.name)
	return r
}

// serviceTo converges a service to running (want true) or stopped and
// checks that the init system got it there.
func serviceTo(ctx context.Context, p map[string]any, env *module.Env, want bool) (domain.Result, error) {
	s, err := serviceCall(ctx, p, env)
	if err != nil {
		return domain.Result{}, err
	}
	name, up := s.name, s.up
	verb, state := "stop", "stopped"
	if want {
		verb, state = "start", "running"
	}
	if up == want {
		return converged(name+" is "+state, s.data(up)), nil
	}
	if want {
		if r, refused, err := s.refuseMasked(ctx, verb); refused || err != nil {
			return r, err
		}
	}
	diff := fmt.Sprintf("service %s: %s -> %s\n", name, s.data(up)["state"], state)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would " + verb + " " + name, Data: s.data(want)}, nil
	}
	if err := s.m.action(ctx, name, verb); err != nil {
		if want {
			return s.failedStart(ctx, err.Error(), diff, false), nil
		}
		return domain.Result{}, err
	}
	now, err := settle(ctx, s.m, name, want, serviceSettle)
	if err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diff, Msg: verb + " " + name, Data: s.data(now)}
	if now != want {
		if want {
			return s.failedStart(ctx, fmt.Sprintf("%s %s returned success but the service is not %s", verb, name, state), diff, now), nil
		}
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
	s, err := serviceCall(ctx, p, env)
	if err != nil {
		return domain.Result{}, err
	}
	verb := "restart"
	if !s.up {
		verb = "start"
	}
	return serviceAction(ctx, env, s, verb)
}

// serviceReloaded asks a running service to reload its configuration and
// starts a stopped one (a reload of a stopped service would do nothing).
func serviceReloaded(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	s, err := serviceCall(ctx, p, env)
	if err != nil {
		return domain.Result{}, err
	}
	verb := "reload"
	if !s.up {
		verb = "start"
	}
	return serviceAction(ctx, env, s, verb)
}

func serviceAction(ctx context.Context, env *module.Env, s *svcCall, verb string) (domain.Result, error) {
	name := s.name
	if r, refused, err := s.refuseMasked(ctx, verb); refused || err != nil {
		return r, err
	}
	diff := fmt.Sprintf("service %s: %s\n", name, verb)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would " + verb + " " + name, Data: s.data(true)}, nil
	}
	if err := s.m.action(ctx, name, verb); err != nil {
		return s.failedStart(ctx, err.Error(), diff, false), nil
	}
	up, err := settle(ctx, s.m, name, true, serviceSettle)
	if err != nil {
		return domain.Result{}, err
	}
	if !up {
		return s.failedStart(ctx, fmt.Sprintf("%s %s returned success but the service is not running", verb, name), diff, up), nil
	}
	return domain.Result{Changed: true, Diff: diff, Msg: verb + " " + name, Data: s.data(up)}, nil
}

// serviceEnabled makes the service start at boot. It does not start it.
func serviceEnabled(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	return serviceSetEnabled(ctx, p, env, true)
}

// serviceSetEnabled makes the service start at boot (want) or not.
func serviceSetEnabled(ctx context.Context, p map[string]any, env *module.Env, want bool) (domain.Result, error) {
	s, err := serviceCall(ctx, p, env)
	if err != nil {
		return domain.Result{}, err
	}
	m, name := s.m, s.name
	data := s.data(s.up)
	if want {
		if r, refused, err := s.refuseMasked(ctx, "enable"); refused || err != nil {
			return r, err
		}
	}
	on, err := m.enabled(ctx, name)
	if err != nil {
		return domain.Result{}, err
	}
	data["enabled"] = on
	verb, from, to := "enable", "disabled", "enabled"
	if !want {
		verb, from, to = "disable", "enabled", "disabled"
	}
	if on == want {
		return converged(name+" is "+to, data), nil
	}
	diff := fmt.Sprintf("service %s: %s -> %s\n", name, from, to)
	if env.Check {
		data["enabled"] = want
		return domain.Result{Changed: true, Diff: diff, Msg: "would " + verb + " " + name, Data: data}, nil
	}
	if want {
		err = m.enable(ctx, name)
	} else {
		err = m.disable(ctx, name)
	}
	if err != nil {
		return domain.Result{}, err
	}
	if on, err = m.enabled(ctx, name); err != nil {
		return domain.Result{}, err
	}
	data["enabled"] = on
	res := domain.Result{Changed: true, Diff: diff, Msg: to + " " + name, Data: data}
	if on != want {
		res.Failed = true
		res.Msg = fmt.Sprintf("%s %s returned success but it is still %s", verb, name, from)
	}
	return res, nil
}
