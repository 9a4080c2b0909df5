package core

import (
	"context"
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
