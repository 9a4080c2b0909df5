package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// Process is a program a test started with StartProcess.
type Process struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	out  Buffer
	done chan struct{}
	err  error
}

// StartProcess starts bin with args, its stdout and stderr collected. When
// the test ends the process is killed by PID unless it exited, and its
// output is logged under name if the test failed.
func StartProcess(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, &p.out)
		}
	})
	return p
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Output returns what the process wrote to stdout and stderr so far.
func (p *Process) Output() string { return p.out.String() }

// Signal sends sig to the process by its PID.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL to the process by its PID, unless it has exited, and
// waits until it is gone. It may be called from any goroutine, and again.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Wait waits for the process to exit by itself and returns how it exited
// (nil for status 0); the test fails if it is still running after within.
func (p *Process) Wait(within time.Duration) error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		p.t.Fatalf("%s still running after %s", p.name, within)
		return nil
	}
}
