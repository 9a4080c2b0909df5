package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// outputCap bounds the stdout and stderr kept from one process.
	outputCap = 1 << 20
	// killGrace is how long a process group gets between SIGTERM and
	// SIGKILL when its context ends.
	killGrace = 2 * time.Second
	// defaultPath is PATH when the soul's own environment has none.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// procSpec describes one process to run.
type procSpec struct {
	argv  []string
	env   map[string]string // added to the base environment
	dir   string
	stdin *string
	// grace replaces killGrace.
	grace time.Duration
	// detach: when ctx ends the process is left running, not signalled,
	// and runProc returns at once with an "interrupted" note. Package
	// managers run so: killing dpkg mid-install leaves the package database
	// half done, and a soul that stops or restarts (KillMode=process) must
	// not take a running apt-get along. Its output goes to unlinked files,
	// not pipes, so it never dies of a closed pipe when the soul is gone.
	detach bool
	// cred runs the process as another user (become_user).
	cred *syscall.Credential
}

// procResult is what a process did. rc is -1 when it was killed by a
// signal or could not start.
type procResult struct {
	rc        int
	stdout    string
	stderr    string
	truncated bool
	killed    bool   // the context ended and the group was killed
	note      string // extra information for the result message
}

// baseEnv is the environment every process starts from: a few variables
// inherited from the soul, with sane defaults, so commands behave the same
// whatever the soul's own environment was.
func baseEnv() map[string]string {
	env := map[string]string{"PATH": defaultPath, "HOME": "/root", "LANG": "C.UTF-8", "SHELL": "/bin/sh"}
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR",
		"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			env[k] = v
		}
	}
	return env
}

// runProc runs spec in its own process group. When ctx ends the whole group
// gets SIGTERM, then SIGKILL after the grace (killGrace unless the spec
// says otherwise), so a grandchild that ignores
// SIGTERM dies too. Output beyond outputCap is dropped and noted. A
// non-zero exit is not an error; failing to start is (with rc -1).
func runProc(ctx context.Context, spec procSpec) (procResult, error) {
	if len(spec.argv) == 0 || spec.argv[0] == "" {
		return procResult{rc: -1}, errors.New("empty command")
	}
	grace := killGrace
	if spec.grace > 0 {
		grace = spec.grace
	}
	env := baseEnv()
	for k, v := range spec.env {
		env[k] = v
	}
	if spec.detach {
		return runDetached(ctx, spec, env)
	}
	cmd := exec.CommandContext(ctx, spec.argv[0], spec.argv[1:]...)
	if !strings.Contains(spec.argv[0], "/") {
		// Look the program up in the PATH the process gets, not the soul's.
		if p, err := lookPath(spec.argv[0], env["PATH"]); err == nil {
			cmd.Path, cmd.Err = p, nil
		} else {
			return procResult{rc: 127}, err
		}
	}
	cmd.Env = envList(env)
	cmd.Dir = spec.dir
	if spec.stdin != nil {
		cmd.Stdin = strings.NewReader(*spec.stdin)
	}
	stdout, stderr := &capWriter{limit: outputCap}, &capWriter{limit: outputCap}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: spec.cred}
	var cancelledAt atomic.Int64
	cmd.Cancel = func() error {
		cancelledAt.Store(time.Now().UnixNano())
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	// After the context ends (or the process exits while a background
	// child still holds its output pipes), Wait gives up after WaitDelay.
	cmd.WaitDelay = grace

	if err := cmd.Start(); err != nil {
		rc := -1
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			rc = 127
		} else if errors.Is(err, os.ErrPermission) {
			rc = 126
		}
		return procResult{rc: rc}, fmt.Errorf("starting %s: %w", spec.argv[0], err)
	}
	pgid := cmd.Process.Pid
	waitErr := cmd.Wait()
	res := procResult{stdout: stdout.String(), stderr: stderr.String(), truncated: stdout.truncated || stderr.truncated}
	if t := cancelledAt.Load(); t != 0 {
		res.killed = true
		killGroup(pgid, time.Unix(0, t).Add(grace))
	}
	res.rc = -1
	if ps := cmd.ProcessState; ps != nil {
		if st, ok := ps.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.note = "killed by signal " + st.Signal().String()
		} else {
			res.rc = ps.ExitCode()
		}
	}
	if errors.Is(waitErr, exec.ErrWaitDelay) && !res.killed {
		res.note = "output was closed after " + grace.String() + " because a background process kept it open"
	}
	return res, nil
}

// killGroup waits until the process group is gone or the deadline passes,
// then sends SIGKILL to whatever is left and waits briefly for it to die.
func killGroup(pgid int, deadline time.Time) {
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for range 50 {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lookPath(file, path string) (string, error) {
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			continue
		}
		p := dir + "/" + file
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: executable file not found in PATH %s", file, path)
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// capWriter keeps the first limit bytes written to it and counts the rest.
type capWriter struct {
	limit     int
	buf       []byte
	truncated bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	keep := p
	if room := w.limit - len(w.buf); len(p) > room {
		w.truncated = true
		keep = p[:max(room, 0)]
	}
	w.buf = append(w.buf, keep...)
	return len(p), nil
}

func (w *capWriter) String() string { return string(w.buf) }

// runCmd runs a helper program (apt-get, systemctl, useradd, …) with extra
// environment and returns its result; it fails on a start error only.
func runCmd(ctx context.Context, env map[string]string, argv ...string) (procResult, error) {
	return runProc(ctx, procSpec{argv: argv, env: env})
}

// runPkgCmd runs a package manager, which is never killed: when the
// context ends (a task timeout, a cancelled run, the soul stopping) it is
// left to finish on its own and the result says it was interrupted.
func runPkgCmd(ctx context.Context, env map[string]string, argv ...string) (procResult, error) {
	return runProc(ctx, procSpec{argv: argv, env: env, detach: true})
}

// cmdError describes a helper program that exited non-zero.
func cmdError(argv []string, r procResult) error {
	msg := strings.TrimSpace(r.stderr)
	if msg == "" {
		msg = strings.TrimSpace(r.stdout)
	}
	if len(msg) > 2000 {
		msg = "…" + msg[len(msg)-2000:]
	}
	if r.note != "" {
		msg = strings.TrimSpace(msg + " (" + r.note + ")")
	}
	return fmt.Errorf("%s exited with rc %d: %s", strings.Join(argv, " "), r.rc, msg)
}
