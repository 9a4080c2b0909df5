package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// runDetached runs spec (see procSpec.detach) in its own process group,
// with standard input from /dev/null and its output in unlinked temporary
// files, and waits for it until ctx ends; then it returns at once and
// leaves the process running.
func runDetached(ctx context.Context, spec procSpec, env map[string]string) (procResult, error) {
	path := spec.argv[0]
	if !strings.Contains(path, "/") {
		p, err := lookPath(path, env["PATH"])
		if err != nil {
			return procResult{rc: 127}, err
		}
		path = p
	}
	var files [2]*os.File
	for i := range files {
		f, err := os.CreateTemp("", "soul-proc-*")
		if err != nil {
			return procResult{rc: -1}, fmt.Errorf("output file for %s: %w", spec.argv[0], err)
		}
		// Unlinked at once: the process and this function hold it open.
		_ = os.Remove(f.Name())
		defer f.Close()
		files[i] = f
	}
	cmd := exec.Command(path, spec.argv[1:]...)
	cmd.Args[0] = spec.argv[0]
	cmd.Env = envList(env)
	cmd.Dir = spec.dir
	if spec.stdin != nil {
		return procResult{rc: -1}, errors.New("a detached process takes no standard input")
	}
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		rc := -1
		if errors.Is(err, os.ErrNotExist) {
			rc = 127
		} else if errors.Is(err, os.ErrPermission) {
			rc = 126
		}
		return procResult{rc: rc}, fmt.Errorf("starting %s: %w", spec.argv[0], err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // reaps it, however long it runs
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return procResult{rc: -1, note: fmt.Sprintf("interrupted: %s (pid %d) was left running to finish on its own; a package manager is never killed half-way",
			spec.argv[0], cmd.Process.Pid)}, nil
	}
	res := procResult{rc: -1}
	var trunc [2]bool
	var out [2]string
	for i, f := range files {
		out[i], trunc[i] = readCapped(f)
	}
	res.stdout, res.stderr, res.truncated = out[0], out[1], trunc[0] || trunc[1]
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		res.note = "killed by signal " + st.Signal().String()
	} else {
		res.rc = cmd.ProcessState.ExitCode()
	}
	return res, nil
}

// readCapped reads f from its start, up to outputCap bytes.
func readCapped(f *os.File) (string, bool) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", false
	}
	w := &capWriter{limit: outputCap}
	_, _ = io.Copy(w, f)
	return w.String(), w.truncated
}
