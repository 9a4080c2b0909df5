package lab

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stuckReport describes what is still running in a host whose clean stop
// did not finish: each process of the host's cgroup tree with the cgroup
// (inside the host: the unit) it belongs to, its state and where in the
// kernel it waits, then the end of PID 1's own log. It is what an operator
// would look at with `systemctl list-jobs` and `ps`, taken from outside
// because nothing inside the host answers any more.
func (h *Host) stuckReport(initPID int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  init pid %d: %s", initPID, procSummary(initPID))
	// Every process of the host's PID namespace, wherever its cgroup: the
	// namespace's init cannot finish exiting while one is left.
	if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", initPID)); err == nil {
		for _, pid := range nsMembers(ns) {
			if pid == initPID {
				continue
			}
			cg := ""
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			for _, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(l, "0::") {
					cg = strings.TrimPrefix(l, "0::")
				}
			}
			fmt.Fprintf(&b, "\n  in the namespace: pid %d (cgroup %s): %s", pid, cg, procSummary(pid))
			if ppid, err := strconv.Atoi(procPPID(pid)); err == nil {
				fmt.Fprintf(&b, "\n    its parent %d: %s", ppid, procSummary(ppid))
			}
		}
	}
	if h.cgroup != "" {
		_ = filepath.WalkDir(h.cgroup, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(h.cgroup, path)
			for _, f := range strings.Fields(string(data)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					continue
				}
				fmt.Fprintf(&b, "\n  %s pid %d: %s", rel, pid, procSummary(pid))
			}
			return nil
		})
	}
	if log, err := os.ReadFile(filepath.Join(h.dir, "init.log")); err == nil {
		b.WriteString("\n  init log" + tail(string(log)))
	}
	return b.String()
}

// nsMembers returns the processes of the PID namespace pidNS (a
// /proc/PID/ns/pid link), as the machine numbers them.
func nsMembers(pidNS string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && ns == pidNS {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the fields of /proc/PID/stat that follow the
// parenthesised command name: state, ppid, …
func procStat(pid int) []string {
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// procState is a process's state letter (R, S, D, T, Z, …), "" when gone.
func procState(pid int) string {
	if f := procStat(pid); len(f) > 0 {
		return f[0]
	}
	return ""
}

// procPPID is a process's parent's pid, as the machine sees it.
func procPPID(pid int) string {
	if f := procStat(pid); len(f) > 1 {
		return f[1]
	}
	return ""
}

// procSummary is a process's command line, state and kernel wait channel.
func procSummary(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid)
	cmd, _ := os.ReadFile(dir + "/cmdline")
	wchan, _ := os.ReadFile(dir + "/wchan")
	state, ppid := procState(pid), procPPID(pid)
	c := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	if len(c) > 200 {
		c = c[:200] + "…"
	}
	return fmt.Sprintf("%q state %s ppid %s wchan %s", c, state, ppid, wchan)
}
