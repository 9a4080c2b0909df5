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

// cgroupTop is the directory, under the machine's cgroup2 mount, that holds
// one directory per lab and below it one per host. A systemd host's PID 1
// is started in <host>/payload with CLONE_INTO_CGROUP and unshares its
// cgroup namespace there, so payload is the root of the host's own cgroup
// tree (systemd creates init.scope, system.slice … below it).
const cgroupTop = "soulstack-lab"

// cgroup2Mount returns where the machine's cgroup2 hierarchy is mounted:
// /sys/fs/cgroup on a pure cgroup2 machine, /sys/fs/cgroup/unified on a
// hybrid one. It is an error when there is none.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// The file system type follows the " - " separator.
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if !ok || len(fields) < 5 || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		found = append(found, unescapeMount(fields[4]))
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading mounts: %w", err)
	}
	for _, want := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if slices.Contains(found, want) {
			return want, nil
		}
	}
	if len(found) > 0 {
		return found[0], nil
	}
	return "", errors.New("systemd hosts need a cgroup2 hierarchy and none is mounted on this machine")
}

// labCgroup returns the cgroup directory of the lab n, or "" when the
// machine has no cgroup2 hierarchy.
func labCgroup(n names) string {
	mnt, err := cgroup2Mount()
	if err != nil {
		return ""
	}
	return filepath.Join(mnt, cgroupTop, n.lab)
}

// prepareHostCgroup makes <host>/payload empty and fresh for a boot and
// opens it for CLONE_INTO_CGROUP. Leftover (empty) directories of the last
// boot are removed first, so systemd starts on a clean tree.
func prepareHostCgroup(dir string) (*os.File, error) {
	payload := filepath.Join(dir, "payload")
	if err := removeCgroupTree(payload); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(payload, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", payload, err)
	}
	f, err := os.Open(payload)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup %s: %w", payload, err)
	}
	return f, nil
}

// killCgroup kills every process in the cgroup tree dir with SIGKILL (one
// write to cgroup.kill, or each process by PID on kernels before 5.14)
// and waits until the tree is empty. A missing dir is not an error.
func killCgroup(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		pids := cgroupPIDs(dir)
		if len(pids) == 0 {
			return nil
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			for _, pid := range pids {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					return fmt.Errorf("killing pid %d of cgroup %s: %w", pid, dir, err)
				}
			}
		}
		if err := waitGone(ctx, pids); err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
	}
}

// cgroupPIDs lists the live processes of the cgroup tree dir.
func cgroupPIDs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && alive(pid) {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroupTree removes the cgroup directory dir and every directory
// below it, deepest first (a cgroup directory holds only the kernel's
// files, which rmdir takes along). A missing dir is not an error; a
// populated cgroup is.
func removeCgroupTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() {
			errs = append(errs, removeCgroupTree(filepath.Join(dir, e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// An exited process may take a moment to leave its cgroup.
	for i := 0; ; i++ {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || i == 50 {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inotifyInstancesPath holds the kernel's limit of inotify instances per
// user, machine-wide.
const inotifyInstancesPath = "/proc/sys/fs/inotify/max_user_instances"

// minInotifyInstances is what a machine running systemd hosts needs at
// least. systemd as PID 1 holds several inotify instances (about seven
// per idle host, measured), every host's systemd runs as the machine's
// root, and the kernel's default limit is 128: past about 18 systemd
// hosts on the machine — all labs together — the next systemd cannot
// create its manager and exits with status 255 at once ("systemd exited
// before it was ready").
const minInotifyInstances = 8192

// raiseInotifyInstances raises the limit in path (inotifyInstancesPath)
// to minInotifyInstances when it is lower; a higher limit is left alone.
func raiseInotifyInstances(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the inotify instance limit: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("inotify instance limit in %s: %w", path, err)
	}
	if n >= minInotifyInstances {
		return nil
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(minInotifyInstances)+"\n"), 0o644); err != nil {
		return fmt.Errorf("raising the inotify instance limit from %d to %d (systemd hosts need it): %w", n, minInotifyInstances, err)
	}
	return nil
}
