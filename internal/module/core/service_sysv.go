package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// sysvManager drives /etc/init.d scripts and the /etc/rc?.d links, the
// Debian way when PID 1 is not systemd.
type sysvManager struct {
	dir   string // init scripts, /etc/init.d
	rcDir string // parent of rc?.d, /etc
}

func (sysvManager) kind() string { return "sysv" }

func (m sysvManager) script(name string) (string, error) {
	p := filepath.Join(m.dir, name)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("service %s not found: no init script %s (and PID 1 is not systemd)", name, p)
	}
	if err != nil {
		return "", fmt.Errorf("service %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("service %s: %s is not an executable file", name, p)
	}
	return p, nil
}

// active runs "<script> status": LSB says 0 means running and anything
// else (1-3 dead or stopped, 4 unknown) means not running.
func (m sysvManager) active(ctx context.Context, name string) (bool, error) {
	p, err := m.script(name)
	if err != nil {
		return false, err
	}
	r, err := runCmd(ctx, nil, p, "status")
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", name, err)
	}
	return r.rc == 0, nil
}

func (m sysvManager) action(ctx context.Context, name, verb string) error {
	p, err := m.script(name)
	if err != nil {
		return err
	}
	r, err := runCmd(ctx, nil, p, verb)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	if verb == "reload" && r.rc == 3 {
		// LSB 3: unimplemented; force-reload is mandatory for LSB scripts.
		if r, err = runCmd(ctx, nil, p, "force-reload"); err != nil {
			return fmt.Errorf("force-reload %s: %w", name, err)
		}
		verb = "force-reload"
	}
	if r.rc != 0 {
		return fmt.Errorf("%s %s: %w", verb, name, cmdError([]string{p, verb}, r))
	}
	return nil
}

// enabled reports whether a start link exists in a multi-user runlevel.
func (m sysvManager) enabled(_ context.Context, name string) (bool, error) {
	links, err := filepath.Glob(filepath.Join(m.rcDir, "rc[2345].d", "S[0-9][0-9]"+name))
	if err != nil {
		return false, fmt.Errorf("looking for start links of %s: %w", name, err)
	}
	return len(links) > 0, nil
}

// enable installs the links from the script's LSB header when there are
// none, and turns existing stop links into start links otherwise.
func (m sysvManager) enable(ctx context.Context, name string) error {
	if _, err := m.script(name); err != nil {
		return err
	}
	links, err := filepath.Glob(filepath.Join(m.rcDir, "rc[0-6S].d", "[SK][0-9][0-9]"+name))
	if err != nil {
		return fmt.Errorf("looking for links of %s: %w", name, err)
	}
	steps := [][]string{{"update-rc.d", name, "enable"}}
	if len(links) == 0 {
		steps = [][]string{{"update-rc.d", name, "defaults"}, {"update-rc.d", name, "enable"}}
	}
	for _, argv := range steps {
		r, err := runCmd(ctx, nil, argv...)
		if err != nil {
			return fmt.Errorf("enabling %s: %w", name, err)
		}
		if r.rc != 0 {
			return fmt.Errorf("enabling %s: %w", name, cmdError(argv, r))
		}
	}
	return nil
}

// prepare does nothing: init scripts are read when they run.
func (sysvManager) prepare(context.Context, string, bool) (bool, error) { return false, nil }

// masked is false: SysV has no masking.
func (sysvManager) masked(context.Context, string) (bool, error) { return false, nil }

// why has nothing to add: the script's own output is in the error.
func (sysvManager) why(context.Context, string) string { return "" }

// disable turns the script's start links into stop links.
func (m sysvManager) disable(ctx context.Context, name string) error {
	if _, err := m.script(name); err != nil {
		return err
	}
	argv := []string{"update-rc.d", name, "disable"}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return fmt.Errorf("disabling %s: %w", name, err)
	}
	if r.rc != 0 {
		return fmt.Errorf("disabling %s: %w", name, cmdError(argv, r))
	}
	return nil
}
