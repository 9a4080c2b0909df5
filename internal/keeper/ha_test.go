package keeper_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// slowService's create run sleeps on every member: a run in flight.
var slowService = map[string]string{
	"service.yml": "name: slow\ndescription: A run that takes a while (internal/keeper/ha_test.go).\n",
	"scenario/create/main.yml": `tasks:
  - name: Sleep
    module: core.exec.run
    params:
      cmd: sleep
      args: ["30"]
`,
}

// vipProc runs only on the leader and says where it ran.
const vipProc = `config:
  run-on-vip: true
steps:
  hello:
    action:
      log: "hello from the leader"
`

// waiterProc waits (one attempt a second) for a condition that never holds.
const waiterProc = `steps:
  wait:
    conditions:
      - const: 1
        expect:
          - {filter: "@", op: "==", value: 2}
        attempts: {max: 1000, interval: 1}
`

// TestDeadKeeperCleanedUp runs keeper-1 (in this process, the leader) and
// the real keeper-2 binary on one PostgreSQL: each has its own row and its
// own Checker token; a run-on-vip launch through keeper-2 is forwarded to
// keeper-1. Then keeper-2 is SIGKILLed with a run and a Checker task of
// its own in flight and a soul connected to it: within 10 s the leader
// aborts the run (its incarnation error_locked, which the survivor can
// unlock), fails the task, marks the soul disconnected, revokes keeper-2's
// token and deletes its row. keeper-2 restarted, the soul comes back, and
// keeper-1's token survived keeper-2's start.
func TestDeadKeeperCleanedUp(t *testing.T) {
	c := startTwoKeepers(t, true)
	ctx := c.ctx
	c.startSoul("soul-a", 0)
	c.startSoul("soul-b", 1)
	st := c.keepers[0].Store()
	testutil.WaitFor(t, 10*time.Second, c.keepers[0].IsLeader, "keeper-1 to lead")

	rows := map[string]store.KeeperRecord{}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		all, err := st.ListKeepers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, kr := range all {
			rows[kr.ID] = kr
		}
		return len(all) == 2
	}, "both keepers' rows")
	k1, k2 := rows[c.ids[0]], rows[c.ids[1]]
	if k1.CheckerTokenID == "" || k1.CheckerTokenID == k2.CheckerTokenID || k1.Address != c.addrs[0] || k2.Address != c.addrs[1] {
		t.Fatalf("keeper rows: %+v", rows)
	}
	for _, kr := range rows {
		if tok, err := st.GetToken(ctx, kr.CheckerTokenID); err != nil || tok.RevokedAt != nil {
			t.Fatalf("checker token of %s: %+v, %v (one keeper's start revoked another's)", kr.ID, tok, err)
		}
	}

	t.Run("keepers list", func(t *testing.T) {
		// Through keeper-2, with soulctl's command tree (as a procedure's
		// "keepers list" would).
		v, err := cli.Exec(ctx, c.clients[1], []string{"keepers", "list"})
		if err != nil {
			t.Fatal(err)
		}
		list, _ := v.([]any)
		if len(list) != 2 {
			t.Fatalf("keepers list: %v", v)
		}
		for i, e := range list {
			k := e.(map[string]any)
			// Each keeper holds one soul's stream (the fleet's balance).
			if k["keeper_id"] != c.ids[i] || k["leader"] != (i == 0) || k["self"] != (i == 1) || k["address"] != c.addrs[i] || k["souls"] != float64(1) {
				t.Errorf("keeper %d: %v", i, k)
			}
		}
		// And in /metrics, the same on either keeper.
		for _, addr := range c.addrs {
			for _, id := range c.ids {
				if got := metric(t, addr, `soulstack_keeper_souls{keeper_id="`+id+`"}`); got != "1" {
					t.Errorf("%s/metrics: soulstack_keeper_souls of %s = %q, want 1", addr, id, got)
				}
			}
		}
	})

	t.Run("run-on-vip forwarded to the leader", func(t *testing.T) {
		if _, err := c.clients[1].PutProcedure(ctx, "vip", vipProc); err != nil {
			t.Fatal(err)
		}
		resp, err := c.clients[1].ExecuteProcedure(ctx, "vip", nil)
		if err != nil {
			t.Fatalf("run-on-vip launch through the non-leader: %v", err)
		}
		if len(resp.Tasks) != 1 {
			t.Fatalf("tasks %+v", resp)
		}
		var task apitypes.CheckerTask
		testutil.WaitFor(t, 15*time.Second, func() bool {
			task, err = c.clients[1].GetCheckerTask(ctx, resp.Tasks[0].ID)
			return err == nil && checker.IsTerminal(task.Status)
		}, "the forwarded task to end")
		if task.Status != checker.StatusSuccess || task.KeeperID != c.ids[0] {
			t.Fatalf("forwarded task: %s on %q (%s), want SUCCESS on the leader %s", task.Status, task.KeeperID, task.RunError, c.ids[0])
		}
	})

	// keeper-2's own work in flight: a run and a Checker task.
	repo := catalogtest.NewRepo(t)
	repo.Commit(slowService, "slow service")
	if _, err := c.clients[0].RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "slow", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	acc, err := c.clients[1].CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "slow-1", Service: "slow", Covens: []string{"relay"}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool {
		r, err := st.GetRun(ctx, acc.ApplyID)
		return err == nil && r.Status == store.RunRunning
	}, "keeper-2's run to run")
	if r, _ := st.GetRun(ctx, acc.ApplyID); r.KeeperID != c.ids[1] {
		t.Fatalf("the run belongs to %q, want keeper-2", r.KeeperID)
	}
	if _, err := c.clients[1].PutProcedure(ctx, "waiter", waiterProc); err != nil {
		t.Fatal(err)
	}
	ex, err := c.clients[1].ExecuteProcedure(ctx, "waiter", nil)
	if err != nil {
		t.Fatal(err)
	}
	taskID := ex.Tasks[0].ID
	testutil.WaitFor(t, 10*time.Second, func() bool {
		task, err := st.GetCheckerTask(ctx, taskID)
		return err == nil && task.Status == checker.StatusRunning && task.KeeperID == c.ids[1]
	}, "keeper-2's checker task to run")

	if err := c.binary.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c.binary.Wait(10 * time.Second)
	var state string
	cleaned := func() bool {
		r, err1 := st.GetRun(ctx, acc.ApplyID)
		inc, err2 := st.GetIncarnation(ctx, "slow-1")
		task, err3 := st.GetCheckerTask(ctx, taskID)
		soul, err4 := st.GetSoul(ctx, "soul-b")
		_, err5 := st.GetKeeper(ctx, c.ids[1])
		tok, err6 := st.GetToken(ctx, k2.CheckerTokenID)
		if err := firstErr(err1, err2, err3, err4, err6); err != nil {
			t.Fatal(err)
		}
		state = strings.Join([]string{"run " + r.Status, "incarnation " + inc.Status, "task " + task.Status,
			"soul-b " + soul.Status + " on " + soul.KeeperID}, ", ")
		return r.Status == store.RunAborted && inc.Status == store.IncarnationErrorLocked &&
			task.Status == checker.StatusFailure && soul.Status == store.SoulDisconnected &&
			domain.ErrorCode(err5) == domain.CodeNotFound && tok.RevokedAt != nil
	}
	for !cleaned() {
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("20 s after keeper-2 was killed: %s", state)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(killed)
	t.Logf("keeper-2 killed: cleaned up by the leader in %s", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("cleanup took %s, want under 10 s", took)
	}
	if task, _ := st.GetCheckerTask(ctx, taskID); !strings.Contains(task.RunError, "keeper-2 died") {
		t.Errorf("task run_error %q", task.RunError)
	}
	// The survivor unlocks the incarnation the dead keeper left.
	if _, err := c.clients[0].UnlockIncarnation(ctx, "slow-1", "keeper-2 died mid-run"); err != nil {
		t.Fatalf("unlock on the survivor: %v", err)
	}

	c.startBinary()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		s, err := st.GetSoul(ctx, "soul-b")
		return err == nil && s.Status == store.SoulConnected && s.KeeperID == c.ids[1]
	}, "soul-b to reconnect to the restarted keeper-2")
	if tok, err := st.GetToken(ctx, k1.CheckerTokenID); err != nil || tok.RevokedAt != nil {
		t.Fatalf("keeper-1's checker token after keeper-2's restart: %+v, %v", tok, err)
	}
	// keeper-1's Checker still reaches the API with its token.
	if _, err := c.clients[0].PutProcedure(ctx, "souls", disconnectedSouls); err != nil {
		t.Fatal(err)
	}
	ex, err = c.clients[0].ExecuteProcedure(ctx, "souls", nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool {
		task, err := st.GetCheckerTask(ctx, ex.Tasks[0].ID)
		return err == nil && task.Status == checker.StatusSuccess
	}, "keeper-1's checker to call souls list")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestDeclaredDeadKeeperRejoins: a keeper the leader declared dead (cut off
// from the database for a while: its row deleted, its souls marked
// disconnected) finds its row gone at its next heartbeat, registers again
// with a new Checker token and records the souls it still holds connected.
func TestDeclaredDeadKeeperRejoins(t *testing.T) {
	ctx := context.Background()
	f := &fleet{t: t, ctx: ctx, dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(f.dir, "keeper")
	cfg.KeeperID = "keeper-1"
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var k *keeper.Keeper
	k, f.addr = serveKeeper(t, cfg, "keeper-1")
	f.fp, f.token = res.Fingerprint, res.Token.Token
	f.connect()
	f.startSouls()
	st := k.Store()
	before, err := st.GetKeeper(ctx, "keeper-1")
	if err != nil {
		t.Fatal(err)
	}

	// What the leader's cleanup does to a keeper it found dead.
	if ok, err := st.DeleteKeeper(ctx, "keeper-1", time.Time{}); err != nil || !ok {
		t.Fatalf("DeleteKeeper: %v, %v", ok, err)
	}
	if err := st.MarkKeeperSoulsDisconnected(ctx, "keeper-1"); err != nil {
		t.Fatal(err)
	}
	f.waitSouls(store.SoulConnected, fleetSIDs...)
	after, err := st.GetKeeper(ctx, "keeper-1")
	if err != nil {
		t.Fatalf("the keeper did not register again: %v", err)
	}
	if after.CheckerTokenID == before.CheckerTokenID || after.Address != f.addr {
		t.Errorf("row after rejoining: %+v (before %+v)", after, before)
	}
	// Its Checker works with the new token.
	if _, err := f.c.PutProcedure(ctx, "souls", disconnectedSouls); err != nil {
		t.Fatal(err)
	}
	ex, err := f.c.ExecuteProcedure(ctx, "souls", nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool {
		task, err := st.GetCheckerTask(ctx, ex.Tasks[0].ID)
		return err == nil && task.Status == checker.StatusSuccess
	}, "the checker to call souls list with its new token")
}
