package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// sigRTMin3 is SIGRTMIN+3, which asks systemd as PID 1 to halt. SIGRTMIN is
// 34 in the C library systemd is built against (the kernel's 32 and 33 are
// reserved for threads).
const sigRTMin3 = syscall.Signal(34 + 3)

// shutdownTimeout bounds a clean stop; a host still up after it is killed.
// A stop takes well under a second (every unit stopped, then the lab cuts
// at systemd-shutdown); 90 s is systemd's own DefaultTimeoutStopSec for
// one unit, so a unit that hangs on its way down is given that and a
// little more before the host is killed and the stop reported unclean.
const shutdownTimeout = 100 * time.Second

// Shutdown stops the host cleanly, as `poweroff` would: systemd stops every
// unit (SIGRTMIN+3 to PID 1) and exits; a sysv host's tini is sent SIGTERM.
// A host still running after a minute is killed as by KillAll. The file
// system stays; Boot starts the host again. Stopping a host that is down
// does nothing.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	init := h.init
	h.mu.Unlock()
	if init == nil || !alive(init.pid) {
		return h.KillAll(ctx) // reap what is left, record the host down
	}
	sig := syscall.SIGTERM
	if h.lab.cfg.Flavour == FlavourSystemd {
		sig = sigRTMin3
	}
	if err := syscall.Kill(init.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: shutdown: %w", h.name, err)
	}
	wait, cancel := context.WithTimeout(ctx, shutdownTimeout)
	defer cancel()
	if err := waitInit(wait, init); err != nil {
		// Killed it is, then; the error says the clean stop failed and
		// what it was waiting for.
		return errors.Join(fmt.Errorf("%s: shutdown: %w; still running:%s", h.name, err, h.stuckReport(init.pid)), h.KillAll(ctx))
	}
	return h.KillAll(ctx)
}

// waitInit waits until init has exited (and, when this process started
// it, has been reaped).
func waitInit(ctx context.Context, init *initProc) error {
	if init.done != nil {
		select {
		case <-init.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("init (pid %d) still running: %w", init.pid, ctx.Err())
		}
	}
	return waitGone(ctx, []int{init.pid})
}

// Reboot stops the host cleanly (Shutdown) and boots it again: a new boot
// id, /run and /tmp state gone, enabled services started by systemd.
func (h *Host) Reboot(ctx context.Context) error {
	if err := h.Shutdown(ctx); err != nil {
		return err
	}
	return h.Boot(ctx)
}

// BootID returns the boot id the host sees in
// /proc/sys/kernel/random/boot_id; it changes with every boot.
func (h *Host) BootID() (string, error) {
	data, err := os.ReadFile(h.dir + "/boot_id")
	if err != nil {
		return "", fmt.Errorf("%s: boot id: %w", h.name, err)
	}
	return string(data[:len(data)-1]), nil
}

// Boots returns how many times this process booted the host, counting the
// boots that follow a reboot asked from inside the host.
func (h *Host) Boots() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.boots
}

// WaitBoot waits until the host has booted more than after times (see
// Boots): a reboot asked from inside the host (`systemctl reboot`) is
// completed by the lab, which boots the host again when its systemd exits
// asking for it.
func (h *Host) WaitBoot(ctx context.Context, after int) error {
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.bootCond.Broadcast()
		h.mu.Unlock()
	})
	defer stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.boots <= after || h.init == nil {
		if ctx.Err() != nil {
			if h.bootErr != nil {
				return fmt.Errorf("%s: waiting for a boot: %w (the last boot failed: %v)", h.name, ctx.Err(), h.bootErr)
			}
			return fmt.Errorf("%s: waiting for a boot: %w", h.name, ctx.Err())
		}
		h.bootCond.Wait()
	}
	return nil
}
