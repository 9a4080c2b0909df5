package modules

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"
)

// holdLockScript takes dpkg's frontend lock the way apt does (an fcntl
// write lock; perl is in every Debian base system), says so, and holds it
// until killed.
const holdLockScript = `open(my $f, ">>", "/var/lib/dpkg/lock-frontend") or die "open: $!";
my $l = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0);
fcntl($f, F_SETLK, $l) or die "lock: $!";
$| = 1; print "locked $$\n"; sleep 3600;`

// TestAptDpkgLockHeldOnLabHost (issue 36): with the dpkg lock held by
// another process, an apt task fails within its timeout naming the lock's
// holder (pid and command), rather than "timed out" with an empty stderr,
// and leaves no apt-get behind that would install after the task failed.
func TestAptDpkgLockHeldOnLabHost(t *testing.T) {
	h := host(t)
	toyRepo(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder, err := h.Command(ctx, "perl", "-MFcntl", "-e", holdLockScript)
	if err != nil {
		t.Fatal(err)
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill() // by its PID
		_ = holder.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "locked ") {
		t.Fatalf("the lock holder did not take the lock: %q %v", line, err)
	}
	pid := strings.TrimSpace(strings.TrimPrefix(line, "locked "))

	start := time.Now()
	r := apply(t, h, "/srv/dpkglock", "  - {name: t, module: core.pkg.installed, timeout: 20s, params: {name: soultoy, allow_unauthenticated: true}}\n", false)
	took := time.Since(start)
	if !r.Failed {
		t.Fatalf("installing under a held dpkg lock did not fail: %+v", r)
	}
	for _, want := range []string{"dpkg lock", "held by process " + pid, "perl", "within the task's timeout"} {
		if !strings.Contains(r.Msg, want) {
			t.Errorf("msg %q does not say %q", r.Msg, want)
		}
	}
	if strings.Contains(r.Msg, "timed out") {
		t.Errorf("msg %q: apt should give up on the lock before the task's timeout", r.Msg)
	}
	t.Logf("failed after %s: %s", took.Round(time.Millisecond), r.Msg)
	if left := strings.TrimSpace(sh(t, h, "pgrep -a -x apt-get || true")); left != "" {
		t.Errorf("an apt-get was left behind the failed task: %s", left)
	}
	if v := pkgVersion(t, h, "soultoy"); v != "" {
		t.Errorf("soultoy %s was installed although the task failed", v)
	}
}
