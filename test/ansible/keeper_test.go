package ansible

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// keeperConfig is the Keeper's configuration here: the task timeout bounds
// one destiny bundle (a role installing its packages) well inside the
// test's own deadline.
const keeperConfig = `heartbeat_interval: 1s
task_timeout: 4m
shutdown_timeout: 5s
log_level: debug
`

// keeperProc is a Keeper running as a real process on the machine side of
// the lab. It is only ever signalled by its PID.
type keeperProc struct {
	dataDir, addr, cfgFile, logPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// newKeeperProc describes a Keeper with its files in dir, listening on addr.
func newKeeperProc(dir, addr string) *keeperProc {
	return &keeperProc{
		dataDir: filepath.Join(dir, "keeper"),
		addr:    addr,
		cfgFile: filepath.Join(dir, "keeper.yaml"),
		logPath: filepath.Join(dir, "keeper.log"),
	}
}

// init runs `keeper init` and returns the first Archon's token, which init
// prints alone on stdout.
func (k *keeperProc) init(ctx context.Context, tlsHost string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, keeperBin, "init", "--data-dir", k.dataDir, "--tls-hosts", tlsHost)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("keeper init: %w\n%s", err, stderr.String())
	}
	token := strings.TrimSpace(stdout.String())
	if token == "" || strings.ContainsAny(token, " \n") {
		return "", fmt.Errorf("keeper init printed %q on stdout, want the token alone", stdout.String())
	}
	return token, nil
}

// start starts `keeper serve`, its output going to logPath.
func (k *keeperProc) start() error {
	if err := os.WriteFile(k.cfgFile, []byte(keeperConfig), 0o600); err != nil {
		return fmt.Errorf("keeper config: %w", err)
	}
	log, err := os.OpenFile(k.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("keeper log: %w", err)
	}
	defer log.Close()
	// No context: the Keeper lives until stop, by PID.
	cmd := exec.Command(keeperBin, "serve", "--data-dir", k.dataDir, "--listen", k.addr, "--config", k.cfgFile)
	cmd.Stdout, cmd.Stderr = log, log
	// A test binary killed mid-run must not leave its Keeper behind (the
	// next run's lab.New removes everything else).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting keeper: %w", err)
	}
	k.cmd, k.done = cmd, make(chan struct{})
	go func() {
		k.err = cmd.Wait()
		close(k.done)
	}()
	return nil
}

// running reports whether the Keeper process is alive.
func (k *keeperProc) running() bool {
	if k.cmd == nil {
		return false
	}
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the Keeper's PID and, if it is still running after
// grace, SIGKILL; it waits until the process has exited.
func (k *keeperProc) stop(grace time.Duration) error {
	if !k.running() {
		return nil
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := k.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("signalling keeper (pid %d): %w", k.cmd.Process.Pid, err)
		}
		select {
		case <-k.done:
			return nil
		case <-time.After(grace):
		}
	}
	return fmt.Errorf("keeper (pid %d) still running after SIGKILL", k.cmd.Process.Pid)
}
