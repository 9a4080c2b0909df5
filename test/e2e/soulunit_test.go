package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
)

// soulUnit is the soul's unit, as the soulstack-soul package installs it.
const soulUnit = "soulstack-soul"

// soulUnitDropIn shortens the soul's reconnect delays for the tests, the
// way an operator would tune an installed unit: a drop-in that replaces
// ExecStart and leaves the rest of the packaged unit as it is.
const soulUnitDropIn = `[Service]
ExecStart=
ExecStart=/usr/bin/soul run --keeper ${SOULSTACK_KEEPER} --data-dir /var/lib/soulstack/soul --reconnect-min 100ms --reconnect-max 1s --log-level debug
`

// installSoulUnit installs the soul in a systemd host as users do: the
// soulstack-soul .deb with dpkg -i (which starts nothing while no Keeper is
// configured), /etc/soulstack/soul.env with the keeper and the join token,
// then systemctl enable --now.
func (c *cluster) installSoulUnit(t *testing.T, h *lab.Host) {
	t.Helper()
	if err := h.CopyIn(soulDeb, "/root/soulstack-soul.deb"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := h.Exec(t.Context(), "dpkg -i /root/soulstack-soul.deb"); err != nil {
		t.Fatalf("dpkg -i soulstack-soul: %v\n%s", err, stderr)
	}
	env := fmt.Sprintf("SOULSTACK_KEEPER=%s\nSOUL_JOIN_TOKEN=%s\n", c.soulURL, c.joinToken)
	for _, f := range []struct {
		path, data string
		mode       os.FileMode
	}{
		{"/etc/systemd/system/" + soulUnit + ".service.d/e2e.conf", soulUnitDropIn, 0o644},
		{"/etc/soulstack/soul.env", env, 0o600},
	} {
		if err := h.WriteFile(f.path, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, err := h.Exec(t.Context(), "systemctl daemon-reload && systemctl enable --now "+soulUnit); err != nil {
		t.Fatalf("starting %s: %v\n%s", soulUnit, err, stderr)
	}
}

// unitProp returns a property of a unit in host sid (systemctl show).
func (c *cluster) unitProp(t *testing.T, sid, unit, prop string) string {
	t.Helper()
	out, _, err := c.host(t, sid).Exec(t.Context(), "systemctl show -p "+prop+" --value "+unit)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// mainPID returns the main PID of a unit in host sid (0: not running).
func (c *cluster) mainPID(t *testing.T, sid, unit string) int {
	t.Helper()
	pid, err := strconv.Atoi(c.unitProp(t, sid, unit, "MainPID"))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// mainPIDs returns the main PID of unit in every host.
func (c *cluster) mainPIDs(t *testing.T, unit string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, sid := range c.sids() {
		m[sid] = c.mainPID(t, sid, unit)
	}
	return m
}

// soulMainPIDKilled kills the soul unit's main process in host sid with
// kill -9 and waits until the process is gone.
func (c *cluster) soulMainPIDKilled(t *testing.T, sid string) {
	t.Helper()
	pid := c.mainPID(t, sid, soulUnit)
	if pid == 0 {
		t.Fatalf("the soul of %s is not running", sid)
	}
	h := c.host(t, sid)
	if _, _, err := h.Exec(t.Context(), "kill -9 "+strconv.Itoa(pid)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the soul of "+sid+" to die", func() error {
		if _, _, err := h.Exec(t.Context(), "kill -0 "+strconv.Itoa(pid)); err == nil {
			return fmt.Errorf("pid %d still running", pid)
		}
		return nil
	})
}

// saveJournals writes the soul's journal of every systemd host into the
// log directory when the test failed, where printLogTails finds it.
func (c *cluster) saveJournals(t *testing.T) {
	if !t.Failed() || c.flavour != lab.FlavourSystemd {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, h := range c.lab.Hosts() {
		out, _, _ := h.Exec(ctx, "journalctl -u "+soulUnit+" --no-pager -q -o short-precise | tail -200")
		_ = os.WriteFile(filepath.Join(c.logDir, "soul-"+h.Name()+".journal.log"), []byte(out), 0o644)
	}
}
