package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrLocked reports that another process (or another Lab in this one)
// holds a lab's lock: New of a lab name in use fails with it.
var ErrLocked = errors.New("locked by another process")

// lockFile takes an exclusive flock on path. With wait it retries until ctx
// ends; without, it fails at once with ErrLocked. The lock lasts until the
// returned file is closed or the process ends, so a crash never leaves a
// stale lock behind.
func lockFile(ctx context.Context, path string, wait bool) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !wait {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mountsUnder lists the mount points at or below dir in the machine's mount
// namespace, deepest (most recently mounted) first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// unescapeMount decodes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder unmounts everything at or below dir, lazily when a mount is
// busy.
func unmountUnder(dir string) error {
	var errs []error
	for range 5 { // stacked mounts need more than one pass
		mps, err := mountsUnder(dir)
		if err != nil || len(mps) == 0 {
			return errors.Join(append(errs, err)...)
		}
		errs = nil
		for _, mp := range mps {
			if err := syscall.Unmount(mp, 0); err != nil {
				if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// nsInode returns the inode identifying the namespace at path (a file in
// /run/netns or /proc/PID/ns/…).
func nsInode(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// pidsInNetns lists the processes whose network namespace is the one with
// inode ino: every process of a host, including the nsenter and unshare
// processes that started them.
func pidsInNetns(ino uint64) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if got, err := nsInode(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && got == ino && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid is a process that has not yet exited; a zombie
// has exited.
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	state := data[i+2]
	return state != 'Z' && state != 'X'
}

// waitGone waits until none of pids is alive.
func waitGone(ctx context.Context, pids []int) error {
	for {
		left := slices.DeleteFunc(slices.Clone(pids), func(p int) bool { return !alive(p) })
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("processes %v still running: %w", left, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killNetns kills every process in the network namespace ns with SIGKILL,
// init first so that the kernel takes down the host's PID namespace at
// once, and waits until they are gone.
func killNetns(ctx context.Context, ns string, initPID int) error {
	ino, err := nsInode(filepath.Join(netnsDir, ns))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		pids := pidsInNetns(ino)
		if len(pids) == 0 {
			return nil
		}
		if slices.Contains(pids, initPID) {
			pids = []int{initPID}
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("killing pid %d of netns %s: %w", pid, ns, err)
			}
		}
		if err := waitGone(ctx, pids); err != nil {
			return fmt.Errorf("netns %s: %w", ns, err)
		}
	}
}

// childOf returns the first child of pid, waiting up to timeout for it to
// appear; 0 when pid exits or none appears.
func childOf(ctx context.Context, pid int, timeout time.Duration) int {
	path := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			c, _ := strconv.Atoi(f[0])
			return c
		}
		time.Sleep(time.Millisecond)
	}
	return 0
}
