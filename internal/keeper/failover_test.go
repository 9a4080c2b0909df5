package keeper_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestSoulsFailOver (issue 30) runs two keepers on one PostgreSQL (keeper-2
// the real binary) and six real souls given both addresses:
//   - their first connections spread over the two keepers;
//   - keeper-2 SIGKILLed, its souls move to keeper-1 within seconds;
//   - keeper-2 restarted, it takes over some souls (rebalance);
//   - keeper-2 drained through the API, every soul leaves it for keeper-1.
func TestSoulsFailOver(t *testing.T) {
	c := startTwoKeepers(t, true)
	ctx := c.ctx
	sids := []string{"fo-1", "fo-2", "fo-3", "fo-4", "fo-5", "fo-6"}
	for _, sid := range sids {
		if err := os.MkdirAll(c.root(sid), 0o755); err != nil {
			t.Fatal(err)
		}
		c.souls[sid] = testutil.StartProcess(t, "soul "+sid, soulBin, "run",
			"--keeper", "https://"+c.addrs[0], "--keeper", "https://"+c.addrs[1], "--sid", sid,
			"--data-dir", filepath.Join(c.dir, sid), "--root", c.root(sid), "--join-token", c.join,
			"--reconnect-min", "50ms", "--reconnect-max", "1s", "--failover-spread", "500ms")
	}
	// holders is where each connected soul is, by keeper id.
	holders := func() map[string][]string {
		out := map[string][]string{}
		for _, sid := range sids {
			s, err := c.clients[0].GetSoul(ctx, sid)
			if err == nil && s.Status == store.SoulConnected {
				out[s.KeeperID] = append(out[s.KeeperID], sid)
			}
		}
		return out
	}
	connected := func(h map[string][]string) int { return len(h[c.ids[0]]) + len(h[c.ids[1]]) }
	var h map[string][]string
	testutil.WaitFor(t, 30*time.Second, func() bool { h = holders(); return connected(h) == len(sids) }, "every soul connected")
	t.Logf("first connections: keeper-1 %v, keeper-2 %v", h[c.ids[0]], h[c.ids[1]])
	if len(h[c.ids[1]]) == 0 || len(h[c.ids[0]]) == 0 {
		// 1 chance in 32 with a fair coin per soul; the rebalance below
		// still moves souls either way.
		t.Logf("all first connections went to one keeper")
	}

	// keeper-2 killed: its souls move to keeper-1.
	moved := len(h[c.ids[1]])
	if err := c.binary.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.binary.Wait(10 * time.Second)
	killed := time.Now()
	testutil.WaitFor(t, 20*time.Second, func() bool { h = holders(); return len(h[c.ids[0]]) == len(sids) }, "every soul on keeper-1 after keeper-2 was killed")
	t.Logf("keeper-2 killed: its %d souls were all on keeper-1 %s later", moved, time.Since(killed).Round(10*time.Millisecond))

	// keeper-2 restarted with fewer souls than its share: it asks keeper-1
	// to move some.
	c.startBinary()
	restarted := time.Now()
	testutil.WaitFor(t, 30*time.Second, func() bool {
		h = holders()
		return len(h[c.ids[1]]) > 0 && connected(h) == len(sids)
	}, "keeper-2 to take over souls after its restart")
	t.Logf("keeper-2 restarted: it held %v %s later", h[c.ids[1]], time.Since(restarted).Round(10*time.Millisecond))

	// keeper-2 drained: each of its souls leaves for keeper-1.
	if _, err := c.clients[0].DrainKeeper(ctx, c.ids[1]); err != nil {
		t.Fatal(err)
	}
	drained := time.Now()
	testutil.WaitFor(t, 30*time.Second, func() bool { h = holders(); return len(h[c.ids[0]]) == len(sids) }, "every soul on keeper-1 after keeper-2's drain")
	t.Logf("keeper-2 drained: every soul on keeper-1 %s later", time.Since(drained).Round(10*time.Millisecond))
	// A drained keeper refuses new souls: none comes back.
	time.Sleep(2 * time.Second)
	if h = holders(); len(h[c.ids[1]]) > 0 {
		t.Fatalf("souls back on the draining keeper-2: %v", h[c.ids[1]])
	}
}
