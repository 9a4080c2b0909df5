package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
)

// Cleanup removes what a lab named name left behind after a crash (or
// after labctl up): its processes, mounts, network namespaces, veths,
// bridge, routing rule, host directories and state. It fails if a live Lab
// of that name holds its lock; removing nothing is not an error.
func Cleanup(ctx context.Context, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("lab name %q is not valid", name)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("cleaning up lab %s: needs root", name)
	}
	n := namesFor(name)
	lock, err := lockFile(ctx, n.lockPath(), false)
	if err != nil {
		return fmt.Errorf("cleaning up lab %s: in use: %w", name, err)
	}
	defer lock.Close()
	if err := cleanupLocked(ctx, n, defaultDir(name)); err != nil {
		return fmt.Errorf("cleaning up lab %s: %w", name, err)
	}
	return nil
}

// cleanupLocked removes everything of the lab n, whose hosts live in dir
// (or in the directory its state file names). The caller holds the lab's
// lock.
func cleanupLocked(ctx context.Context, n names, dir string) error {
	st, err := readState(n)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dirs := []string{dir}
	inits := map[string]int{}
	if st != nil {
		if st.Dir != "" && st.Dir != dir {
			dirs = append(dirs, st.Dir)
		}
		for _, h := range st.Hosts {
			inits[h.NetNS] = h.InitPID
		}
	}
	var errs []error
	// Processes first: they hold the mounts and the namespaces.
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if n.isNetns(e.Name()) {
			errs = append(errs, killNetns(ctx, e.Name(), inits[e.Name()]))
		}
	}
	if cg := labCgroup(n); cg != "" {
		if err := killCgroup(ctx, cg); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, removeCgroupTree(cg))
		}
		// The parent of every lab's directory goes with the last lab.
		_ = syscall.Rmdir(filepath.Dir(cg))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	socks, _ := filepath.Glob(filepath.Join(runDir, n.lab+".h*.notify"))
	for _, s := range socks {
		errs = append(errs, os.Remove(s))
	}
	for _, d := range dirs {
		hosts := filepath.Join(d, "hosts")
		if err := unmountUnder(hosts); err != nil {
			errs = append(errs, err)
			continue // never remove through a mount
		}
		if err := os.RemoveAll(hosts); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, teardownNet(ctx, n))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(n.statePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Attach returns a running lab started by another process (labctl up),
// from its state file, to run commands in its hosts. Attaching takes no
// lock; Close on an attached lab tears it down like Cleanup.
func Attach(name string) (*Lab, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("lab name %q is not valid", name)
	}
	n := namesFor(name)
	st, err := readState(n)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("lab %s is not running (no %s)", name, n.statePath())
	}
	if err != nil {
		return nil, fmt.Errorf("attaching to lab %s: %w", name, err)
	}
	subnet, err := netip.ParsePrefix(st.Subnet)
	if err != nil {
		return nil, fmt.Errorf("attaching to lab %s: subnet: %w", name, err)
	}
	flavour := st.Flavour
	if flavour == "" {
		flavour = FlavourSysV
	}
	l := &Lab{cfg: Config{Name: name, Hosts: len(st.Hosts), Dir: st.Dir, Flavour: flavour}, names: n, base: st.Base, repo: st.Repo, subnet: subnet}
	for i, hs := range st.Hosts {
		h := newHost(l, i+1, hs.Name, hs.IP, hs.NetNS, hs.Veth, filepath.Join(st.Dir, "hosts", hs.Name))
		// Trust the recorded PID only if it still is in the host's network
		// namespace: PIDs are reused.
		ns, err1 := nsInode(filepath.Join(netnsDir, hs.NetNS))
		got, err2 := nsInode(fmt.Sprintf("/proc/%d/ns/net", hs.InitPID))
		if hs.InitPID != 0 && err1 == nil && err2 == nil && ns == got && alive(hs.InitPID) {
			h.init = &initProc{pid: hs.InitPID}
		}
		l.hosts = append(l.hosts, h)
	}
	return l, nil
}
