package lab

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// initScript runs with the machine's /bin/sh as PID 1 of the host's new
// PID namespace, in its new mount, UTS and IPC namespaces (and its network
// namespace). It mounts the host's pseudo file systems and the repository
// inside the host's mount namespace, pivots into the overlay root, drops
// every machine mount, reports "ready" on fd 3 and becomes tini, which
// reaps the orphans of daemons. /proc/sys is read-only but for net.*,
// which is per network namespace: a host must not retune the machine's
// kernel under the other hosts and labs.
const initScript = `set -eu
root=$1 host=$2 repo=$3
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount --bind "$root/proc/sys" "$root/proc/sys"
mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
mount -o remount,bind,ro "$root/proc/sys"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
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
mount --bind "$repo" "$root/srv/lab-repo"
mount -o remount,bind,ro "$root/srv/lab-repo"
hostname "$host"
cd "$root"
mkdir -p .lab-oldroot
pivot_root . .lab-oldroot
exec chroot . /bin/sh -c 'umount -l /.lab-oldroot && rmdir /.lab-oldroot && echo ready >&3 && exec 3>&- && exec /usr/bin/tini -- /bin/sleep infinity'
`

// Boot starts the host: mounts its root file system if needed and starts
// its PID 1. Booting a running host does nothing.
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
		return fmt.Errorf("%s: boot: %w", h.name, err)
	}
	h.init = init
	return nil
}

func (h *Host) startInit(ctx context.Context) (*initProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	logPath := filepath.Join(h.dir, "init.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		w.Close()
		return nil, err
	}
	cmd := exec.Command("nsenter", "--net="+filepath.Join(netnsDir, h.netns), "--",
		"unshare", "--pid", "--fork", "--kill-child", "--mount", "--uts", "--ipc", "--propagation", "private",
		"/bin/sh", "-c", initScript, "lab-init", h.RootDir(), h.name, h.lab.repo)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	// The host outlives a labctl that starts it, and a ^C meant for a test
	// run must not take it down half-way.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	logf.Close()
	if err != nil {
		return nil, err
	}
	init := &initProc{done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(init.done)
	}()
	fail := func(err error) (*initProc, error) {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // --kill-child takes PID 1 along
		<-init.done
		if log, rerr := os.ReadFile(logPath); rerr == nil {
			err = fmt.Errorf("%w%s", err, tail(string(log)))
		}
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
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
	return init, nil
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
