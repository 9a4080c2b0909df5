package install

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/testutil"
)

// maxExposure is the highest `systemd-analyze security` exposure the
// keeper's unit may score (0 is fully locked down, 10 is unprotected).
const maxExposure = 2.0

// testKeeperDeb installs the soulstack-keeper .deb on a systemd host,
// initializes the Keeper as the README says, starts the hardened unit and
// proves it serves (listens on :8080 and stays active) and that its
// sandbox scores at most maxExposure in systemd-analyze security.
func testKeeperDeb(t *testing.T, e *env, h *lab.Host) {
	start := time.Now()
	deb := buildDeb(t, "soulstack-keeper")
	t.Logf("soulstack-keeper .deb built in %v", time.Since(start).Round(time.Millisecond))
	if err := h.CopyIn(deb, "/root/"+filepath.Base(deb)); err != nil {
		t.Fatal(err)
	}
	// The README's commands: dpkg -i, keeper init, systemctl enable --now.
	cmds := e.readme(t, "dpkg -i soulstack-keeper_", "")
	if len(cmds) != 3 {
		t.Fatalf("README's keeper package block: %q, want dpkg -i, keeper init, systemctl", cmds)
	}
	for _, c := range cmds {
		sh(t, h, "cd /root && "+c)
	}
	if tok := sh(t, h, "cat /root/admin.token"); strings.Count(tok, ".") != 2 {
		t.Fatalf("keeper init printed %q, want the first Archon's token", tok)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		out, _ := try(h, "ss -Hltn 'sport = :8080'")
		return out != ""
	}, "keeper listening on :8080")
	time.Sleep(time.Second)
	if st, _ := try(h, "systemctl is-active soulstack-keeper"); st != "active" {
		out, _ := try(h, "journalctl -u soulstack-keeper --no-pager -q | tail -30")
		t.Fatalf("soulstack-keeper is %q:\n%s", st, out)
	}
	out := sh(t, h, "systemd-analyze security --no-pager soulstack-keeper.service | tail -1")
	// "→ Overall exposure level for soulstack-keeper.service: 1.1 OK :-)"
	_, rest, _ := strings.Cut(out, ".service:")
	f := strings.Fields(rest)
	if len(f) == 0 {
		t.Fatalf("systemd-analyze security: %q", out)
	}
	score, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("systemd-analyze security: %q: %v", out, err)
	}
	t.Logf("systemd-analyze security soulstack-keeper: %.1f", score)
	if score > maxExposure {
		full, _ := try(h, "systemd-analyze security --no-pager soulstack-keeper.service | grep '✗'")
		t.Errorf("keeper unit exposure %.1f, want ≤ %.1f:\n%s", score, maxExposure, full)
	}
}
