package hostsec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/lab/labtest"
)

// TestH1SwapRaceOnLabHost: audit H1, race variant, on a real host — nobody
// swaps its directory d with a symlink to root's etc-sim as fast as it can
// while the real soul (root) writes, chowns to nobody, deletes and makes
// directories through d, 90 times. Whatever each task's outcome (it may
// land in nobody's real d, or be refused), root's directory and file keep
// their owner, mode, inode, times and content, and nothing appears in it.
func TestH1SwapRaceOnLabHost(t *testing.T) {
	h := host(t)
	const u = "/srv/h1race"
	sh(t, h, `set -e; rm -rf `+u+`; mkdir -p `+u+`/appdir `+u+`/etc-sim `+u+`/d
echo "ORIGINAL ROOT-OWNED CONTENT" > `+u+`/etc-sim/sudoers-sim; chmod 0440 `+u+`/etc-sim/sudoers-sim
chown nobody:nogroup `+u+`/appdir`)
	statCmd := "stat -c '%n %u:%g %a %s %i %Y' " + u + "/etc-sim " + u + "/etc-sim/sudoers-sim; sha256sum " + u + "/etc-sim/sudoers-sim; ls -A " + u + "/etc-sim"
	before := sh(t, h, statCmd)
	sh(t, h, "cd "+u+"/appdir && setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sh -c "+
		shq("while :; do rm -rf d; mkdir d; rm -rf d; ln -s "+u+"/etc-sim d; done")+" </dev/null >/dev/null 2>&1 & echo $! > "+u+"/swapper.pid")
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			sh(t, h, "kill $(cat "+u+"/swapper.pid)")
		}
	}
	t.Cleanup(stop)

	var tasks strings.Builder
	for i := range 90 {
		target := u + "/appdir/d/sudoers-sim"
		var task string
		switch i % 3 {
		case 0:
			task = `{module: core.file.present, params: {path: ` + target + `, content: "nobody ALL=(ALL) NOPASSWD: ALL\n", owner: nobody, mode: "0666"}}`
		case 1:
			task = `{module: core.file.absent, params: {path: ` + target + `}}`
		case 2:
			task = `{module: core.file.directory, params: {path: ` + u + `/appdir/d/x, owner: nobody, mode: "0777"}}`
		}
		fmt.Fprintf(&tasks, "  - {name: race %d, failed_when: \"false\", %s\n", i, strings.TrimPrefix(task, "{"))
	}
	out, stderr := labtest.ApplyRaw(t, h, u+"/d/race", "input: {}\ntasks:\n"+tasks.String(), false)
	stop()
	res := labtest.Tasks(t, out, stderr)
	if len(res) != 90 {
		t.Fatalf("soul apply ran %d of the 90 tasks: %s %s", len(res), out, stderr)
	}
	changed := 0
	for _, r := range res {
		if r.Changed {
			changed++
		}
	}
	t.Logf("90 tasks during the swap race: %d changed nobody's own d", changed)
	if after := sh(t, h, statCmd); after != before {
		t.Fatalf("root's files changed during the race:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
