package lab

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// initScript runs with the machine's /bin/sh as PID 1 of the host's new
// PID namespace, in its new mount, UTS, IPC and (for systemd hosts) cgroup
// namespaces, and its network namespace. It mounts the host's pseudo file
// systems and the repository inside the host's mount namespace, pivots
// into the overlay root, drops every machine mount, reports "ready" on fd
// 3 and becomes the host's init: tini (sysv), which reaps the orphans of
// daemons, or systemd. /proc/sys is read-only but for net.*, which is per
// network namespace: a host must not retune the machine's kernel under the
// other hosts and labs. Every boot gets its own boot id (as under
// systemd-nspawn), so "has this host rebooted" has an answer inside it.
//
// For systemd the host's cgroup namespace root (its own directory of the
// machine's cgroup2 tree) is mounted on /sys/fs/cgroup, and the machine's
// notify socket on /run/host/notify, where systemd sends READY=1 once it
// has booted.
const initScript = `set -eu
root=$1 host=$2 repo=$3 flavour=$4 notify=$5 bootid=$6
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount --bind "$root/proc/sys" "$root/proc/sys"
mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
mount -o remount,bind,ro "$root/proc/sys"
mount --bind "$bootid" "$root/proc/sys/kernel/random/boot_id"
mount -o remount,bind,ro "$root/proc/sys/kernel/random/boot_id"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
if [ "$flavour" = systemd ]; then
	mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
fi
mount -t tmpfs -o nosuid,mode=0755,size=4m dev "$root/dev"
for d in null:3 zero:5 full:7 random:8 urandom:9; do
	mknod -m 0666 "$root/dev/${d%:*}" c 1 "${d#*:}"
done
mknod -m 0666 "$root/dev/tty" c 5 0
mkdir -m 0755 "$root/dev/pts"
mkdir -m 1777 "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$root/dev/pts"
mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$root/dev/shm"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
mount -t tmpfs -o nosuid,nodev,mode=0755 run "$root/run"
mkdir -m 1777 "$root/run/lock"
init='exec /usr/bin/tini -- /bin/sleep infinity'
if [ "$flavour" = systemd ]; then
	mkdir -m 0755 "$root/run/host"
	: >"$root/run/host/notify"
	mount --bind "$notify" "$root/run/host/notify"
	init='exec env -i container=soulstack-lab NOTIFY_SOCKET=/run/host/notify /lib/systemd/systemd'
fi
mount --bind "$repo" "$root/srv/lab-repo"
mount -o remount,bind,ro "$root/srv/lab-repo"
hostname "$host"
cd "$root"
mkdir -p .lab-oldroot
pivot_root . .lab-oldroot
exec chroot . /bin/sh -c "umount -l /.lab-oldroot && rmdir /.lab-oldroot && echo ready >&3 && exec 3>&- && $init"
`

// withoutTimeCaps is setpriv's argument list to run name with args
// without CAP_SYS_TIME: the machine's clock (and the kernel's time zone,
// whose first setting warps the clock by the zone's offset) is not
// namespaced, so a host that held the capability — its PID 1, any unit,
// anything entered from outside — could move the time of every process
// on the machine (timedatectl set-timezone, date -s, an NTP daemon).
// Dropping it from the bounding set takes it from every descendant;
// dropping it from the inheritable set too keeps root's exec from
// regaining it.
func withoutTimeCaps(name string, args ...string) []string {
	return append([]string{"--bounding-set", "-sys_time", "--inh-caps", "-sys_time", "--", name}, args...)
}

// bootTimeout bounds a boot: the init script, and for systemd hosts the
// time until systemd reports READY=1 (well under a second when the machine
// is idle; the machine may be busy).
const bootTimeout = 60 * time.Second

// Boot starts the host: mounts its root file system if needed and starts
// its PID 1, and for a systemd host waits until systemd has booted (every
// unit of multi-user.target started). Booting a running host does
// nothing.
func (h *Host) Boot(ctx context.Context) error {
	if err := h.boot(ctx); err != nil {
		return err
	}
	if err := h.lab.recordInit(h, h.InitPID()); err != nil {
		return fmt.Errorf("%s: boot: %w", h.name, err)
	}
	return nil
}

func (h *Host) boot(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init != nil && alive(h.init.pid) {
		return nil
	}
	if err := h.mountRoot(); err != nil {
		return err
	}
	init, err := h.startInit(ctx)
	if err != nil {
		h.bootErr = err
		return fmt.Errorf("%s: boot: %w", h.name, err)
	}
	h.init = init
	h.boots++
	h.bootErr = nil
	h.bootCond.Broadcast()
	return nil
}

func (h *Host) startInit(ctx context.Context) (*initProc, error) {
	systemd := h.lab.cfg.Flavour == FlavourSystemd
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	bootID := filepath.Join(h.dir, "boot_id")
	if err := os.WriteFile(bootID, []byte(newUUID()+"\n"), 0o444); err != nil {
		w.Close()
		return nil, err
	}
	logPath := filepath.Join(h.dir, "init.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		w.Close()
		return nil, err
	}
	var notify *net.UnixConn
	var cgroup *os.File
	var limitNote string
	notifyPath := "-"
	// The host outlives a labctl that starts it, and a ^C meant for a test
	// run must not take it down half-way.
	attr := &syscall.SysProcAttr{Setsid: true}
	if systemd {
		if h.cgroup == "" {
			err = errors.New("no cgroup2 hierarchy on this machine")
		} else if cgroup, err = prepareHostCgroup(h.cgroup); err == nil {
			// Not fatal: the limit may suffice; a boot that fails says why
			// it may not have.
			if lerr := raiseInotifyInstances(inotifyInstancesPath); lerr != nil {
				limitNote = lerr.Error()
			}
			defer cgroup.Close()
			attr.UseCgroupFD, attr.CgroupFD = true, int(cgroup.Fd())
			notifyPath = h.lab.names.notifyPath(h.index)
			notify, err = listenNotify(notifyPath)
		}
		if err != nil {
			w.Close()
			logf.Close()
			return nil, err
		}
		defer notify.Close()
	}
	args := []string{"--net=" + filepath.Join(netnsDir, h.netns), "--",
		"unshare", "--pid", "--fork", "--kill-child", "--mount", "--uts", "--ipc", "--propagation", "private"}
	if systemd {
		args = append(args, "--cgroup")
	}
	args = append(args, "/bin/sh", "-c", initScript, "lab-init", h.RootDir(), h.name, h.lab.repo,
		h.lab.cfg.Flavour, notifyPath, bootID)
	cmd := exec.Command("setpriv", withoutTimeCaps("nsenter", args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = attr
	err = cmd.Start()
	w.Close()
	logf.Close()
	if err != nil {
		return nil, err
	}
	init := &initProc{done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		init.reboot = rebootAsked(cmd.ProcessState) || init.finalVerb.Load() == "reboot"
		close(init.done)
		if init.reboot && systemd {
			h.rebootAfterExit(init)
		}
	}()
	fail := func(err error) (*initProc, error) {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // --kill-child takes PID 1 along
		<-init.done
		if ps := cmd.ProcessState; ps != nil {
			err = fmt.Errorf("%w (init: %s)", err, ps)
		}
		if limitNote != "" {
			err = fmt.Errorf("%w (%s)", err, limitNote)
		}
		if log, rerr := os.ReadFile(logPath); rerr == nil {
			err = fmt.Errorf("%w%s", err, tail(string(log)))
		}
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, bootTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = r.SetReadDeadline(time.Now()) })
	defer stop()
	// Read one line, not up to EOF: unshare keeps its copy of fd 3 open.
	msg, err := bufio.NewReader(io.LimitReader(r, 64)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(fmt.Errorf("waiting for init: %w", errors.Join(err, ctx.Err())))
	}
	if strings.TrimSpace(string(msg)) != "ready" {
		return fail(errors.New("init failed"))
	}
	init.pid = childOf(ctx, cmd.Process.Pid, 5*time.Second)
	if init.pid == 0 {
		return fail(errors.New("init exited"))
	}
	if systemd {
		if err := waitReady(ctx, notify, init.done); err != nil {
			return fail(fmt.Errorf("waiting for systemd: %w", err))
		}
		go init.cutAtFinalStage()
	}
	return init, nil
}

// cutAtFinalStage cuts the power of a systemd host once its shutdown has
// reached systemd-shutdown, PID 1's last stage: every unit is stopped and
// the journal closed by then, and what systemd-shutdown would do next in a
// container (signal what is left, then a global sync(2) of the machine's
// disks from a child process that nothing can kill while it runs) only
// makes a stop or reboot take as long as the busiest disk of the machine.
// The verb systemd-shutdown was given (reboot, poweroff, halt) is kept for
// the reboot decision.
//
// systemd-shutdown begins by stopping every process (kill(-1, SIGSTOP))
// and continues them after its SIGTERM; a cut that lands in between
// leaves processes entered from outside (Host.Start, Exec) stopped, and
// their nsenter parent, which stops itself when its child stops, never
// reaps them — so the namespace's init could not finish exiting (the
// kernel's zap_pid_ns_processes waits for every member to be reaped).
// After the cut those parents are continued until init is gone.
func (init *initProc) cutAtFinalStage() {
	cmdline := fmt.Sprintf("/proc/%d/cmdline", init.pid)
	pidNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init.pid))
	for {
		select {
		case <-init.done:
			return
		case <-time.After(20 * time.Millisecond):
		}
		data, err := os.ReadFile(cmdline)
		if err != nil {
			return
		}
		args := strings.Split(string(data), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "systemd-shutdown" {
			continue
		}
		init.finalVerb.Store(args[1])
		_ = syscall.Kill(init.pid, syscall.SIGKILL)
		for pidNS != "" {
			continueStoppedEntrants(pidNS)
			select {
			case <-init.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		return
	}
}

// continueStoppedEntrants sends SIGCONT to every stopped process outside
// the PID namespace pidNS (a /proc/PID/ns/pid link) whose child is in it:
// the nsenter processes that entered the host and stopped along with
// their child.
func continueStoppedEntrants(pidNS string) {
	for _, pid := range nsMembers(pidNS) {
		ppid, _ := strconv.Atoi(procPPID(pid))
		if ppid <= 1 || procState(ppid) != "T" {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", ppid)); err == nil && ns != pidNS {
			_ = syscall.Kill(ppid, syscall.SIGCONT)
		}
	}
}

// listenNotify binds the datagram socket systemd reports its state on.
func listenNotify(path string) (*net.UnixConn, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	return c, nil
}

// waitReady waits for READY=1 on the notify socket (sd_notify(3)), or
// until init exits or ctx ends.
func waitReady(ctx context.Context, c *net.UnixConn, exited <-chan struct{}) error {
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := c.ReadFromUnix(buf)
		if err == nil {
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line == "READY=1" {
					return nil
				}
			}
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return err
		}
		select {
		case <-exited:
			return errors.New("systemd exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
	}
}

// rebootAsked reports whether init ended because the host asked to
// reboot: in a PID namespace, reboot(2) kills PID 1 with SIGHUP (SIGINT
// for halt and power-off), which unshare passes on as status 129 or as
// the signal itself.
func rebootAsked(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() == syscall.SIGHUP
	}
	return ps.ExitCode() == 128+int(syscall.SIGHUP)
}

// rebootAfterExit boots a host again whose systemd exited asking for a
// reboot (systemctl reboot inside it, or core.system.rebooted), unless the
// lab took the host down meanwhile.
func (h *Host) rebootAfterExit(init *initProc) {
	h.mu.Lock()
	if h.init != init || h.lab.closing.Load() {
		h.mu.Unlock()
		return
	}
	h.init = nil
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+10*time.Second)
	defer cancel()
	_ = h.Boot(ctx) // a failure is kept in bootErr and reported by the next call
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b)
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// mountRoot mounts the host's overlay root file system unless it is
// mounted already.
func (h *Host) mountRoot() error {
	root := h.RootDir()
	mps, err := mountsUnder(root)
	if err != nil {
		return err
	}
	for _, mp := range mps {
		if mp == root {
			return nil
		}
	}
	upper, work := filepath.Join(h.dir, "upper"), filepath.Join(h.dir, "work")
	for _, d := range []string{upper, work, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
	}
	for _, p := range []string{h.lab.base, upper, work} {
		if strings.ContainsAny(p, ",:") {
			return fmt.Errorf("%s: overlay directory %q must not contain ',' or ':'", h.name, p)
		}
	}
	opts := "lowerdir=" + h.lab.base + ",upperdir=" + upper + ",workdir=" + work
	if err := syscall.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("%s: mounting overlay root: %w", h.name, err)
	}
	return nil
}

// writeIdentity writes the files that make the host itself: hostname,
// hosts (every lab host and the gateway), and a machine id.
func (h *Host) writeIdentity() error {
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n\n")
	fmt.Fprintf(&hosts, "%s\tlab-gateway\n", h.lab.GatewayIP())
	for _, o := range h.lab.hosts {
		fmt.Fprintf(&hosts, "%s\t%s\n", o.ip, o.name)
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	files := map[string]string{
		"/etc/hostname":   h.name + "\n",
		"/etc/hosts":      hosts.String(),
		"/etc/machine-id": hex.EncodeToString(id) + "\n",
	}
	for path, data := range files {
		if err := h.WriteFile(path, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}
