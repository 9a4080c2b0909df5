package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// run runs a command on the machine (not in a host) and returns its
// standard output; a failure carries the command and the tail of its
// standard error.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w%s", name, strings.Join(args, " "), err, tail(stderr.String()))
	}
	return stdout.String(), nil
}

// ip runs the ip command.
func ip(ctx context.Context, args ...string) error {
	_, err := run(ctx, nil, "ip", args...)
	return err
}

// tail formats the last lines of a command's error output for an error
// message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	const max = 2000
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return ": " + s
}

// requireTools checks that the commands the lab shells out to exist, so a
// missing one is reported once, by name, with the package that has it.
func requireTools(tools map[string]string) error {
	var errs []error
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			errs = append(errs, fmt.Errorf("%s not found (install the Debian package %s)", tool, pkg))
		}
	}
	return errors.Join(errs...)
}

// hostTools are needed to run a lab; buildTools only to build the caches.
var (
	hostTools = map[string]string{
		"ip": "iproute2", "nsenter": "util-linux", "unshare": "util-linux", "setpriv": "util-linux",
		"pivot_root": "util-linux", "mount": "mount", "hostname": "hostname",
	}
	buildTools = map[string]string{
		"debootstrap": "debootstrap", "apt-get": "apt", "dpkg-deb": "dpkg",
	}
)
