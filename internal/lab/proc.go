package lab

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Proc is a long-running process started in a host with Host.Start.
type Proc struct {
	host    *Host
	argv    []string
	pid     int         // machine PID of the process; 0 if it exited before it was seen
	proc    *os.Process // the process itself, held by pidfd so a reused PID is never signalled
	nsenter *os.Process // its parent on the machine, which waits for it
	done    chan struct{}
	err     error // nsenter's exit, which mirrors the process's
}

// PID returns the process's PID as seen from the machine (not from inside
// the host), or 0 if it exited before Start saw it.
func (p *Proc) PID() int { return p.pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns how it ended: nil for
// status 0, otherwise an error wrapping *exec.ExitError.
func (p *Proc) Wait() error {
	<-p.done
	if p.err != nil {
		return fmt.Errorf("%s: %s: %w", p.host.name, p.argv[0], p.err)
	}
	return nil
}

// Signal sends sig to the process (by PID, never by name). Signalling an
// exited process does nothing.
func (p *Proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	target := p.proc
	if target == nil {
		target = p.nsenter
	}
	if err := target.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: signalling %s (pid %d): %w", p.host.name, p.argv[0], p.pid, err)
	}
	return nil
}

// Kill kills the process with SIGKILL and waits until it has exited.
// Processes it started keep running, as after a crash.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s: %s (pid %d) still running 10s after SIGKILL", p.host.name, p.argv[0], p.pid)
	}
}
