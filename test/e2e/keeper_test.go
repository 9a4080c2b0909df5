package e2e

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

// keeperConfig is the YAML configuration the e2e Keeper runs with: short
// heartbeats, so a host whose link is cut is noticed in seconds (three
// missed beats), and a task timeout that ends a stuck test long before the
// test's own deadline.
const keeperConfig = `heartbeat_interval: 1s
task_timeout: 2m
shutdown_timeout: 5s
log_level: debug
`

// keeperProc is a Keeper running as a real process on the machine side of
// the lab. It is only ever signalled by its PID.
type keeperProc struct {
	dataDir string
	addr    string // listen address, gateway IP:port
	cfgFile string
	logPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// initKeeper runs `keeper init` in dataDir and returns the first Archon's
// token, which init prints alone on stdout.
func initKeeper(ctx context.Context, dataDir, tlsHost string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, keeperBin, "init", "--data-dir", dataDir, "--tls-hosts", tlsHost)
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

// start starts `keeper serve`, appending its output to logPath.
func (k *keeperProc) start() error {
	if err := os.WriteFile(k.cfgFile, []byte(keeperConfig), 0o600); err != nil {
		return fmt.Errorf("keeper config: %w", err)
	}
	log, err := os.OpenFile(k.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("keeper log: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(log, "=== keeper serve started at %s\n", time.Now().Format(time.RFC3339Nano))
	// No context: the Keeper lives until kill or stop, by PID.
	cmd := exec.Command(keeperBin, "serve", "--data-dir", k.dataDir, "--listen", k.addr, "--config", k.cfgFile)
	cmd.Stdout, cmd.Stderr = log, log
	// A test binary killed mid-run must not leave its Keeper behind (the
	// next run's lab.New removes everything else).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting keeper: %w", err)
	}
	k.cmd, k.done, k.err = cmd, make(chan struct{}), nil
	go func(done chan struct{}) {
		k.err = cmd.Wait()
		close(done)
	}(k.done)
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

// kill kills the Keeper with SIGKILL, as a crash would, and waits until it
// has exited.
func (k *keeperProc) kill() error {
	return k.signal(syscall.SIGKILL, 10*time.Second)
}

// stop asks the Keeper to shut down gracefully (SIGTERM); if it is still
// running after grace, it is killed.
func (k *keeperProc) stop(grace time.Duration) error {
	if err := k.signal(syscall.SIGTERM, grace); err == nil {
		return nil
	}
	return k.kill()
}

func (k *keeperProc) signal(sig syscall.Signal, within time.Duration) error {
	if !k.running() {
		return nil
	}
	if err := k.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling keeper (pid %d): %w", k.cmd.Process.Pid, err)
	}
	select {
	case <-k.done:
		return nil
	case <-time.After(within):
		return fmt.Errorf("keeper (pid %d) still running %v after %v", k.cmd.Process.Pid, within, sig)
	}
}

// pid returns the Keeper's PID, or 0 when it is not running.
func (k *keeperProc) pid() int {
	if !k.running() {
		return 0
	}
	return k.cmd.Process.Pid
}

// newKeeperProc describes a Keeper with its files in dir.
func newKeeperProc(dir, addr string) *keeperProc {
	return &keeperProc{
		dataDir: filepath.Join(dir, "keeper"),
		addr:    addr,
		cfgFile: filepath.Join(dir, "keeper.yaml"),
		logPath: filepath.Join(dir, "keeper.log"),
	}
}
