package core

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestAptLockTimeout: apt waits for a held dpkg lock at most until shortly
// before the task's deadline, so it gives up (naming the holder) while the
// task can report it; without a deadline it waits aptLockWait.
func TestAptLockTimeout(t *testing.T) {
	now := time.Now()
	if got := aptLockTimeout(context.Background(), now); got != 300 {
		t.Errorf("no deadline: %d, want 300", got)
	}
	for _, c := range []struct {
		left time.Duration
		want int
	}{{2 * time.Minute, 115}, {time.Hour, 300}, {20 * time.Second, 15}, {3 * time.Second, 0}, {-time.Second, 0}} {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(c.left))
		if got := aptLockTimeout(ctx, now); got != c.want {
			t.Errorf("deadline in %s: %d, want %d", c.left, got, c.want)
		}
		cancel()
	}
}

func TestDpkgLockHeldMessage(t *testing.T) {
	stderr := "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (perl)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n"
	m := dpkgLockHeld.FindStringSubmatch(stderr)
	if m == nil || m[1] != "/var/lib/dpkg/lock-frontend" || m[2] != "4242" || m[3] != "perl" {
		t.Fatalf("matched %q", m)
	}
}

// TestDpkgLockHolderAsked: after a lock wait apt names only the lock; the
// holder is asked of the lock itself (F_GETLK) and named with its command.
func TestDpkgLockHolderAsked(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock-frontend")
	if err := os.WriteFile(lock, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	// perl is in every Debian base system; it takes the lock as apt does.
	cmd := exec.Command("perl", "-MFcntl", "-e", `open(my $f, ">>", $ARGV[0]) or die; my $l = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLK, $l) or die "lock: $!"; $| = 1; print "locked\n"; sleep 60`, lock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the holder did not lock: %q %v", line, err)
	}
	holder, got := dpkgLockHolder("E: Unable to acquire the dpkg frontend lock (" + lock + "), is another process using it?\n")
	if want := fmt.Sprintf("process %d (perl)", cmd.Process.Pid); got != lock || holder != want {
		t.Fatalf("holder %q of %q, want %q of %q", holder, got, want, lock)
	}
	if holder, lock := dpkgLockHolder("E: Unable to locate package nosuch\n"); lock != "" || holder != "" {
		t.Fatalf("not a lock error, yet %q %q", holder, lock)
	}
}
