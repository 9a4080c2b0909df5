package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrHostDown is returned for a host whose processes were killed and that
// was not booted again.
var ErrHostDown = errors.New("host is down")

// Host is one machine of the lab. Its methods are safe for concurrent use.
type Host struct {
	lab   *Lab
	index int
	name  string
	ip    string
	netns string
	veth  string
	dir   string // <lab dir>/hosts/<name>: upper, work, root, init.log, boot_id
	// cgroup is the host's directory in the machine's cgroup2 tree
	// (systemd hosts; "" for sysv hosts).
	cgroup string

	mu       sync.Mutex
	init     *initProc // nil while the host is down
	boots    int       // boots by this process, for WaitBoot
	bootErr  error     // why the last boot failed
	bootCond *sync.Cond
}

// initProc is a host's PID 1 (tini or systemd), seen from the machine.
type initProc struct {
	pid int
	// done is closed once the unshare process that started it has been
	// reaped; nil when another process started it (an attached lab).
	done chan struct{}
	// reboot tells, once done is closed, whether init asked for a reboot.
	reboot bool
	// finalVerb is what systemd-shutdown was started for (reboot,
	// poweroff, halt) when the lab cut the power at that stage.
	finalVerb atomic.Value
}

// newHost returns a host of lab l (not yet booted).
func newHost(l *Lab, index int, name, ip, netns, veth, dir string) *Host {
	h := &Host{lab: l, index: index, name: name, ip: ip, netns: netns, veth: veth, dir: dir}
	if l.cfg.Flavour == FlavourSystemd {
		if cg := labCgroup(l.names); cg != "" {
			h.cgroup = filepath.Join(cg, name)
		}
	}
	h.bootCond = sync.NewCond(&h.mu)
	return h
}

// hostEnv is the environment of every process started in a host.
var hostEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"LANG=C.UTF-8",
	"DEBIAN_FRONTEND=noninteractive",
}

// Name returns the host's name, which is also its hostname (lab-host-N).
func (h *Host) Name() string { return h.name }

// IP returns the host's IPv4 address on the lab bridge.
func (h *Host) IP() string { return h.ip }

// RootDir returns the directory on the machine where the host's root file
// system is mounted. Files written there appear in the host, except under
// /proc, /sys, /dev and /run, which the host mounts over.
func (h *Host) RootDir() string { return filepath.Join(h.dir, "root") }

// NetNS returns the name of the host's network namespace (for ip netns).
func (h *Host) NetNS() string { return h.netns }

// Veth returns the machine-side interface of the host's link.
func (h *Host) Veth() string { return h.veth }

// InitPID returns the machine PID of the host's PID 1, or 0 while the host
// is down.
func (h *Host) InitPID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init == nil {
		return 0
	}
	return h.init.pid
}

// initPID returns the PID of the host's init, or ErrHostDown.
func (h *Host) initPID() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init == nil || !alive(h.init.pid) {
		if h.bootErr != nil {
			return 0, fmt.Errorf("%s: %w (the last boot failed: %v)", h.name, ErrHostDown, h.bootErr)
		}
		return 0, fmt.Errorf("%s: %w", h.name, ErrHostDown)
	}
	return h.init.pid, nil
}

// Flavour returns the host's flavour: FlavourSystemd or FlavourSysV.
func (h *Host) Flavour() string { return h.lab.cfg.Flavour }

// nsenter returns a command that runs argv inside the host: in all its
// namespaces, at its root, with hostEnv.
func (h *Host) nsenter(ctx context.Context, pid int, argv ...string) *exec.Cmd {
	args := append([]string{"--target", strconv.Itoa(pid),
		"--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "setpriv", withoutTimeCaps("nsenter", args...)...)
	cmd.Env = hostEnv
	return cmd
}

// Command returns a command that runs argv inside the host, for callers
// that need its standard streams (an interactive shell, streamed output).
// argv[0] is looked up in the host's PATH. When ctx ends, the command's
// process group is killed; daemons it started in their own session (as
// init scripts do) keep running.
func (h *Host) Command(ctx context.Context, argv ...string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: empty command", h.name)
	}
	pid, err := h.initPID()
	if err != nil {
		return nil, err
	}
	cmd := h.nsenter(ctx, pid, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A daemon that keeps the command's pipes open must not hold Wait up.
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}

// Exec runs script with /bin/sh -c inside the host and returns its output.
// A non-zero exit is an error wrapping *exec.ExitError. Cancellation is as
// for Command.
func (h *Host) Exec(ctx context.Context, script string) (stdout, stderr string, err error) {
	cmd, err := h.Command(ctx, "/bin/sh", "-c", script)
	if err != nil {
		return "", "", err
	}
	var outb, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &errb
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("%s: %s: %w%s", h.name, abbrev(script), err, tail(errb.String()))
	}
	return outb.String(), errb.String(), err
}

func abbrev(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.Quote(s)
}

// Start starts a long-running process inside the host, with its standard
// output and error appended to logFile, a path on the machine (no log when
// empty). ctx bounds the start only: the process runs until it exits, is
// killed, or the host goes down. argv[0] is looked up in the host's PATH.
func (h *Host) Start(ctx context.Context, argv []string, logFile string) (*Proc, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: start: empty command", h.name)
	}
	pid, err := h.initPID()
	if err != nil {
		return nil, err
	}
	// The process outlives ctx, so the command gets none.
	cmd := h.nsenter(context.Background(), pid, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if logFile != "" {
		if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
			return nil, fmt.Errorf("%s: start %s: %w", h.name, argv[0], err)
		}
		f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: start %s: %w", h.name, argv[0], err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", h.name, argv[0], err)
	}
	p := &Proc{host: h, argv: argv, nsenter: cmd.Process, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	// nsenter forks the process into the host's PID namespace and waits for
	// it; its child is the process itself.
	p.pid = childOf(ctx, cmd.Process.Pid, 5*time.Second)
	if p.pid != 0 {
		if proc, err := os.FindProcess(p.pid); err == nil {
			p.proc = proc
		}
	}
	return p, nil
}

// CutLink takes the host's link down: it stays up inside the host, but no
// packet reaches or leaves it, as when a cable is pulled.
func (h *Host) CutLink(ctx context.Context) error {
	if err := ip(ctx, "link", "set", h.veth, "down"); err != nil {
		return fmt.Errorf("%s: cutting link: %w", h.name, err)
	}
	return nil
}

// RestoreLink brings the host's link back up.
func (h *Host) RestoreLink(ctx context.Context) error {
	if err := ip(ctx, "link", "set", h.veth, "up"); err != nil {
		return fmt.Errorf("%s: restoring link: %w", h.name, err)
	}
	return nil
}

// KillAll kills every process of the host with SIGKILL, as a power cut
// would: the whole PID namespace and any process that entered the host's
// network namespace. The file system stays; Boot starts the host again.
func (h *Host) KillAll(ctx context.Context) error {
	h.mu.Lock()
	err := h.killLocked(ctx)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	if err := h.lab.recordInit(h, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", h.name, err)
	}
	return nil
}

func (h *Host) killLocked(ctx context.Context) error {
	initPID := 0
	if h.init != nil {
		initPID = h.init.pid
	}
	if h.cgroup != "" {
		if err := killCgroup(ctx, h.cgroup); err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
	}
	if err := killNetns(ctx, h.netns, initPID); err != nil {
		return fmt.Errorf("%s: %w", h.name, err)
	}
	if h.init != nil && h.init.done != nil {
		select {
		case <-h.init.done:
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for init: %w", h.name, ctx.Err())
		}
	}
	h.init = nil
	return nil
}

// CopyIn copies the file or directory tree src on the machine to dst, an
// absolute path inside the host, creating parent directories. Symbolic
// links inside the host are not followed out of its root.
func (h *Host) CopyIn(src, dst string) error {
	root, err := os.OpenRoot(h.RootDir())
	if err != nil {
		return fmt.Errorf("%s: copy in: %w", h.name, err)
	}
	defer root.Close()
	rel, err := relInHost(dst)
	if err != nil {
		return fmt.Errorf("%s: copy in: %w", h.name, err)
	}
	err = filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, path)
		target := filepath.Join(rel, r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := root.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return root.Chmod(target, info.Mode().Perm())
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			_ = root.Remove(target)
			return root.Symlink(link, target)
		case d.Type().IsRegular():
			return copyInto(root, path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: not a regular file, directory or link", path)
		}
	})
	if err != nil {
		return fmt.Errorf("%s: copy %s to %s: %w", h.name, src, dst, err)
	}
	return nil
}

// WriteFile writes data to path, an absolute path inside the host,
// creating parent directories.
func (h *Host) WriteFile(path string, data []byte, perm os.FileMode) error {
	root, err := os.OpenRoot(h.RootDir())
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", h.name, path, err)
	}
	defer root.Close()
	rel, err := relInHost(path)
	if err == nil {
		err = root.MkdirAll(filepath.Dir(rel), 0o755)
	}
	if err == nil {
		err = root.WriteFile(rel, data, perm)
	}
	if err == nil {
		err = root.Chmod(rel, perm)
	}
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", h.name, path, err)
	}
	return nil
}

// ReadFile reads path, an absolute path inside the host.
func (h *Host) ReadFile(path string) ([]byte, error) {
	rel, err := relInHost(path)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", h.name, path, err)
	}
	root, err := os.OpenRoot(h.RootDir())
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", h.name, path, err)
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", h.name, path, err)
	}
	return data, nil
}

func relInHost(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is not an absolute path", path)
	}
	rel := strings.TrimPrefix(filepath.Clean(path), "/")
	if rel == "" {
		return ".", nil
	}
	return rel, nil
}

func copyInto(root *os.Root, src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := root.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// Replace rather than overwrite, so a running binary can be updated.
	_ = root.Remove(dst)
	out, err := root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return root.Chmod(dst, perm)
}
