package devmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/soulstack/soulstack/internal/soul"
)

// Soul is one local soul process of dev mode.
type Soul struct {
	SID    string   `json:"sid"`
	Covens []string `json:"covens"`
	// DataDir holds the soul's key and pinned fingerprint; Root is the
	// directory its file modules are confined to; Log its output.
	DataDir string `json:"data_dir"`
	Root    string `json:"root"`
	Log     string `json:"log"`
}

// rootSkeleton are the directories a soul's root starts with.
var rootSkeleton = []string{"etc", "opt", "srv", "tmp", "var/lib", "var/log"}

// soulCovens are the covens of soul i (1-based) of n: all carry dev; the
// last one is db and the others web, so `on:` has something to narrow.
func soulCovens(i, n int) []string {
	if n > 1 && i == n {
		return []string{"dev", "db"}
	}
	return []string{"dev", "web"}
}

// findSoulBinary is the soul executable: explicit, else next to this
// program, else on PATH.
func findSoulBinary(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("--soul-bin: %w", err)
		}
		return filepath.Abs(explicit)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "soul")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("soul"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("the soul binary is neither next to keeper nor on PATH: build both with `make build` (bin/keeper, bin/soul) or pass --soul-bin")
}

// soulSupervisor runs the soul processes and restarts one that exits
// while dev mode is up.
type soulSupervisor struct {
	bin         string
	keeperURL   string
	fingerprint string
	log         *slog.Logger
	out         io.Writer // one-line notices for the user
	wg          sync.WaitGroup
}

// start launches s and keeps it running until ctx ends; joinToken is used
// only for a soul that never joined (no key in its data dir yet).
func (sv *soulSupervisor) start(ctx context.Context, s Soul, joinToken string) error {
	// The root starts as the skeleton of a host's file system, so services
	// written for real hosts (/etc/motd, /srv/…) find their directories.
	for _, d := range rootSkeleton {
		if err := os.MkdirAll(filepath.Join(s.Root, d), 0o755); err != nil {
			return fmt.Errorf("soul %s: %w", s.SID, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.DataDir, soul.KeyFile)); err == nil {
		joinToken = ""
	}
	started := make(chan error, 1)
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		sv.supervise(ctx, s, joinToken, started)
	}()
	return <-started
}

// supervise runs one soul until ctx ends, restarting it with a backoff when
// it exits on its own. The first start's error goes to started.
func (sv *soulSupervisor) supervise(ctx context.Context, s Soul, joinToken string, started chan<- error) {
	backoff := time.Second
	first := true
	for {
		began, wasFirst := time.Now(), first
		var startErr error
		err := sv.runOnce(ctx, s, joinToken, func(err error) {
			startErr = err
			if first {
				started <- err
				first = false
			}
		})
		if startErr != nil && !wasFirst {
			fmt.Fprintf(sv.out, "soul %s cannot be restarted: %v\n", s.SID, startErr)
		}
		if ctx.Err() != nil || startErr != nil {
			return
		}
		joinToken = "" // joined now: the key and the fingerprint are kept
		if time.Since(began) > time.Minute {
			backoff = time.Second
		}
		fmt.Fprintf(sv.out, "soul %s exited (%v); restarting in %s — its log: %s\n", s.SID, err, backoff, s.Log)
		sv.log.Warn("soul exited", "sid", s.SID, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// runOnce starts the soul process and waits for it. The process gets its
// own process group (Ctrl-C in the terminal reaches dev mode only, which
// stops the souls itself: SIGTERM by PID, SIGKILL 5s later) and dies with
// dev mode if that is killed (parent-death signal; the OS thread that
// started it stays locked until it is reaped, since the signal follows
// that thread).
func (sv *soulSupervisor) runOnce(ctx context.Context, s Soul, joinToken string, onStart func(error)) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		onStart(fmt.Errorf("soul %s: %w", s.SID, err))
		return err
	}
	defer logf.Close()
	args := []string{"run",
		"--keeper", sv.keeperURL,
		"--fingerprint", sv.fingerprint,
		"--sid", s.SID,
		"--data-dir", s.DataDir,
		"--root", s.Root,
		"--reconnect-max", "5s",
	}
	cmd := exec.CommandContext(ctx, sv.bin, args...)
	cmd.Env = os.Environ()
	if joinToken != "" {
		cmd.Env = append(cmd.Env, "SOUL_JOIN_TOKEN="+joinToken)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("starting soul %s (%s): %w", s.SID, sv.bin, err)
		onStart(err)
		return err
	}
	sv.log.Info("soul started", "sid", s.SID, "pid", cmd.Process.Pid, "root", s.Root)
	onStart(nil)
	err = cmd.Wait()
	if err != nil && ctx.Err() == nil {
		if tail := lastLines(s.Log, 3); tail != "" {
			err = fmt.Errorf("%w: %s", err, tail)
		}
	}
	return err
}

// wait blocks until every supervised soul has stopped.
func (sv *soulSupervisor) wait() { sv.wg.Wait() }

// lastLines is the end of a log file, joined on one line.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
