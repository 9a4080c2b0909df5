package core

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

const (
	testSvc        = "soulstack-testsvc"
	testSvcScript  = "/etc/init.d/" + testSvc
	testSvcPidfile = "/run/" + testSvc + ".pid"
)

// svcMu serializes the tests that install the test service.
var svcMu sync.Mutex

// testSvcInit is an LSB init script around a shell loop daemon, started by
// start-stop-daemon with a pidfile; it logs "ready" once its SIGHUP trap is
// set, and "reload" on each SIGHUP.
const testSvcInit = `#!/bin/sh
### BEGIN INIT INFO
# Provides:          soulstack-testsvc
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: Soul Stack test service
### END INIT INFO
PIDFILE=@PIDFILE@
LOG=@LOG@
case "$1" in
  start)
    start-stop-daemon --start --quiet --oknodo --background --make-pidfile --pidfile "$PIDFILE" \
      --startas /bin/sh -- -c "trap 'echo reload >> $LOG' HUP; echo ready >> $LOG; while :; do sleep 0.2; done"
    ;;
  stop)
    start-stop-daemon --stop --quiet --oknodo --pidfile "$PIDFILE" --remove-pidfile --retry TERM/5/KILL/5
    ;;
  restart)
    "$0" stop && "$0" start
    ;;
  reload|force-reload)
    start-stop-daemon --stop --quiet --signal HUP --pidfile "$PIDFILE"
    ;;
  status)
    start-stop-daemon --status --pidfile "$PIDFILE"
    exit $?
    ;;
  *)
    echo "usage: $0 start|stop|restart|reload|status" >&2
    exit 3
    ;;
esac
`

// installTestService writes the init script and removes the service, its
// links and its pidfile when the test ends.
func installTestService(t *testing.T) (log string) {
	t.Helper()
	if _, err := os.Stat(testSvcScript); err == nil {
		t.Fatalf("%s exists before the test; refusing to touch it", testSvcScript)
	}
	log = filepath.Join(t.TempDir(), "reloads.log")
	script := strings.NewReplacer("@PIDFILE@", testSvcPidfile, "@LOG@", log).Replace(testSvcInit)
	if err := os.WriteFile(testSvcScript, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command(testSvcScript, "stop").Run()
		_ = exec.Command("update-rc.d", "-f", testSvc, "remove").Run()
		_ = os.Remove(testSvcScript)
		_ = os.Remove(testSvcPidfile)
	})
	return log
}

func svcPid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(testSvcPidfile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !alive(pid) {
		return 0
	}
	return pid
}

func svc(t *testing.T, op string, check bool) (changed bool, data map[string]any) {
	t.Helper()
	res := run(t, "core.service."+op, map[string]any{"name": testSvc}, &module.Env{Check: check})
	if res.Failed {
		t.Fatalf("service.%s failed: %s", op, res.Msg)
	}
	return res.Changed, res.Data
}

func TestServiceSysV(t *testing.T) {
	needRoot(t)
	if systemdBooted() {
		t.Skip("PID 1 is systemd here; the SysV path runs on hosts without systemd (CI)")
	}
	t.Parallel()
	lockUntilCleanup(t, &svcMu)
	log := installTestService(t)

	if changed, data := svc(t, "stopped", false); changed || data["state"] != "stopped" || data["manager"] != "sysv" {
		t.Fatalf("stopped on a stopped service: changed %v data %v", changed, data)
	}
	if changed, _ := svc(t, "running", true); !changed || svcPid(t) != 0 {
		t.Fatal("check mode: want changed and the service still stopped")
	}
	if changed, _ := svc(t, "running", false); !changed {
		t.Fatal("running: want changed")
	}
	pid := svcPid(t)
	if pid == 0 {
		t.Fatal("running: the daemon is not running")
	}
	if changed, _ := svc(t, "running", false); changed || svcPid(t) != pid {
		t.Fatal("running again: want unchanged and the same process")
	}
	if changed, _ := svc(t, "stopped", true); !changed || svcPid(t) != pid {
		t.Fatal("check mode stopped: want changed and the process untouched")
	}

	// A SIGHUP before the daemon set its trap would kill it.
	waitFor(t, "the daemon to be ready", func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "ready") })
	if changed, _ := svc(t, "reloaded", false); !changed || svcPid(t) != pid {
		t.Fatal("reloaded: want changed and the same process")
	}
	waitFor(t, "the daemon to log the reload", func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "reload") })

	if changed, _ := svc(t, "restarted", true); !changed || svcPid(t) != pid {
		t.Fatal("check mode restarted: want changed and the same process")
	}
	if changed, _ := svc(t, "restarted", false); !changed {
		t.Fatal("restarted: want changed")
	}
	newPid := svcPid(t)
	if newPid == 0 || newPid == pid {
		t.Fatalf("restarted: pid %d -> %d, want a new running process", pid, newPid)
	}

	if changed, _ := svc(t, "stopped", false); !changed || svcPid(t) != 0 || alive(newPid) {
		t.Fatal("stopped: want changed and the daemon gone")
	}
	if changed, _ := svc(t, "stopped", false); changed {
		t.Fatal("stopped again: want unchanged")
	}
	// Reloading a stopped service starts it.
	if changed, data := svc(t, "reloaded", false); !changed || data["state"] != "running" || svcPid(t) == 0 {
		t.Fatal("reloaded on a stopped service: want it started")
	}

	links := func() []string {
		l, _ := filepath.Glob("/etc/rc[2345].d/S[0-9][0-9]" + testSvc)
		return l
	}
	if changed, _ := svc(t, "enabled", true); !changed || len(links()) != 0 {
		t.Fatal("check mode enabled: want changed and no links")
	}
	if changed, data := svc(t, "enabled", false); !changed || data["enabled"] != true || len(links()) != 4 {
		t.Fatalf("enabled: want changed and start links in rc2-5, got %v", links())
	}
	link := snap(t, links()[0])
	if changed, _ := svc(t, "enabled", false); changed {
		t.Fatal("enabled again: want unchanged")
	}
	link.untouched(t, links()[0])

	_, err := runErr(t, "core.service.running", map[string]any{"name": "soulstack-no-such-svc"}, nil)
	wantErrContains(t, err, "service soulstack-no-such-svc not found")
	_, err = runErr(t, "core.service.running", map[string]any{"name": "../../bin/sh"}, nil)
	wantErrContains(t, err, "not a valid service name")
}

func TestServiceFailingStart(t *testing.T) {
	needRoot(t)
	if systemdBooted() {
		t.Skip("PID 1 is systemd here; the SysV path runs on hosts without systemd (CI)")
	}
	t.Parallel()
	lockUntilCleanup(t, &svcMu)
	installTestService(t)
	bad := "#!/bin/sh\ncase \"$1\" in status) exit 3;; *) echo 'cannot start: port in use' >&2; exit 1;; esac\n"
	if err := os.WriteFile(testSvcScript, []byte(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, "core.service.running", map[string]any{"name": testSvc}, nil)
	if !res.Failed {
		t.Fatalf("a start the init script refused: %+v, want failed", res)
	}
	for _, want := range []string{"start " + testSvc, "rc 1", "port in use"} {
		if !strings.Contains(res.Msg, want) {
			t.Errorf("message %q does not mention %q", res.Msg, want)
		}
	}
}

func TestServiceNameCheck(t *testing.T) {
	for _, ok := range []string{"redis-server", "getty@tty1.service", "a.b_c+d:e"} {
		if err := checkServiceName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a..b", "..", "-H", "a b", "x;reboot", "$(id)", "a/b", "`id`"} {
		if err := checkServiceName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseSystemctlShow(t *testing.T) {
	got := parseSystemctlShow("LoadState=loaded\nActiveState=active\nUnitFileState=enabled\n")
	if got != (unitState{load: "loaded", active: "active", unitFile: "enabled"}) {
		t.Errorf("got %+v", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
