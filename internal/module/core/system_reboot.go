package core

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// RebootModule is the module that reboots its host. The soul only
// schedules the reboot and answers at once; the Keeper's run engine then
// waits for the soul to come back with a new boot id (param timeout) before
// the run goes on.
const RebootModule = "core.system.rebooted"

// DefaultRebootTimeout is how long the Keeper waits for a rebooted host
// when the task gives no timeout param.
const DefaultRebootTimeout = 10 * time.Minute

// rebootDelay leaves the soul time to deliver its answer before the host
// goes down.
const rebootDelay = 2 * time.Second

func init() {
	register(RebootModule, module.Schema{
		Summary: "Reboot the host; the run goes on once its soul is back with a new boot id",
		Params: map[string]module.Param{
			"reason":  str(false, "why, logged on the host"),
			"timeout": str(false, "how long to wait for the host to come back (a Go duration; default 10m)"),
		},
		Unconfinable: true,
	}, systemRebooted)
}

// RebootTimeout parses the timeout param of a core.system.rebooted call.
func RebootTimeout(params map[string]any) (time.Duration, error) {
	s, _ := params["timeout"].(string)
	if s == "" {
		return DefaultRebootTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout %q is not a positive duration (e.g. 5m)", s)
	}
	return d, nil
}

func systemRebooted(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	reason := a.str("reason")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if _, err := RebootTimeout(p); err != nil {
		return domain.Result{}, err
	}
	if reason == "" {
		reason = "requested by a Soul Stack task"
	}
	reason = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	prev := readBootID()
	if prev == "" {
		return failed("cannot read this host's boot id (/proc/sys/kernel/random/boot_id): the Keeper could not tell that it rebooted"), nil
	}
	data := map[string]any{"previous_boot_id": prev, "reason": reason}
	if env.Check {
		return domain.Result{Changed: true, Msg: "would reboot (" + reason + ")", Data: data}, nil
	}
	var argv []string
	delay := fmt.Sprintf("%d", int(rebootDelay.Seconds()))
	if systemdBooted() {
		// A transient timer in systemd: it fires whatever happens to the
		// soul after it answered.
		argv = []string{"systemd-run", "--quiet", "--on-active=" + delay, "--timer-property=AccuracySec=100ms",
			"--description=Soul Stack reboot: " + reason, "/bin/systemctl", "reboot"}
	} else {
		argv = []string{"/bin/sh", "-c", "(sleep " + delay + "; exec /sbin/reboot) </dev/null >/dev/null 2>&1 &"}
	}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return domain.Result{}, fmt.Errorf("scheduling the reboot: %w", err)
	}
	if r.rc != 0 {
		return domain.Result{}, fmt.Errorf("scheduling the reboot: %w", cmdError(argv, r))
	}
	return domain.Result{Changed: true, Msg: "rebooting in " + rebootDelay.String() + " (" + reason + ")", Data: data}, nil
}

func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
