package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// chaosService's create run sleeps a few seconds on every member, then
// echoes: runs are in flight when keepers die.
var chaosService = map[string]string{
	"service.yml": "name: chaos\ndescription: Runs in flight while keepers die (internal/keeper/chaos_test.go).\n",
	"scenario/create/main.yml": `tasks:
  - name: Sleep
    module: core.exec.run
    params:
      cmd: sleep
      args: ["4"]
  - name: Echo
    module: core.test.echo
    params:
      message: done
`,
}

// lingerProc logs, then waits about 20 s (a condition that never holds,
// one attempt a second) and ends SUCCESS: the schedule's ticks and the
// tasks launched through each keeper are in flight when keepers die.
const lingerProc = `steps:
  tick:
    action:
      log: "tick"
  linger:
    conditions:
      - const: 1
        expect:
          - {filter: "@", op: "==", value: 2}
        attempts: {max: 20, interval: 1}
        on-error:
          - error-type: AttemptsLimitReached
            handler: _exit
`

// chaos is three real keeper processes on one PostgreSQL database, souls
// connected to them through a load balancer (as souls reach a keeper
// address that fronts several), and a store read directly.
type chaos struct {
	t       *testing.T
	ctx     context.Context
	dir     string
	dbURL   string
	st      store.Store
	ids     []string
	addrs   []string
	procs   []*testutil.Process
	clients []*apiclient.Client
	lb      *balancer
	souls   []string
}

// TestChaosKeepersKilled is SPEC §10.4 under fire: three keepers, six
// souls spread over them, runs and Checker tasks started through every
// keeper and a schedule of every minute. Once the schedule's first tick
// runs on the leader, the leader is SIGKILLed, then the keeper that took
// over. Each time leadership moves and the dead keeper is cleaned up
// within 10 s (failover times printed): its runs aborted, its Checker
// tasks (the tick in flight among them) failed, its souls no longer
// connected to it. In the end every run has ended, every incarnation is
// ready or error_locked, every Checker task has ended, no soul is
// connected to a dead keeper (they reconnected to the survivor), the
// killed leader's tick was never run again, and the survivor runs the
// next tick on time.
func TestChaosKeepersKilled(t *testing.T) {
	c := startChaos(t, 3, 6)
	ctx := c.ctx
	repo := catalogtest.NewRepo(t)
	repo.Commit(chaosService, "chaos service")
	if _, err := c.clients[0].RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "chaos", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.clients[0].PutProcedure(ctx, "tick", lingerProc); err != nil {
		t.Fatal(err)
	}
	sc, err := c.clients[0].CreateSchedule(ctx, apitypes.CreateScheduleRequest{Procedure: "tick", Cron: "* * * * *"})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	// The first tick, in flight on the leader when it is killed.
	var firstTick store.CheckerTask
	testutil.WaitFor(t, 75*time.Second, func() bool {
		ts := c.scheduled(sc.ID)
		if len(ts) == 0 {
			return false
		}
		firstTick = ts[len(ts)-1]
		return firstTick.Status == checker.StatusRunning
	}, "the schedule's first tick to run")
	t.Logf("first tick: task %s on %s, waited %s", firstTick.ID, firstTick.KeeperID, time.Since(began).Round(time.Second))

	var runs []string
	lingering := map[string]string{} // task id -> keeper id
	alive := []int{0, 1, 2}
	for round := 1; round <= 2; round++ {
		// A run and a Checker task in flight through every living keeper.
		for _, i := range alive {
			runs = append(runs, c.startRun(i, fmt.Sprintf("chaos-r%d-k%d", round, i+1)))
			ex, err := c.clients[i].ExecuteProcedure(ctx, "tick", nil)
			if err != nil {
				t.Fatalf("launching a task through %s: %v", c.ids[i], err)
			}
			lingering[ex.Tasks[0].ID] = c.ids[i]
		}
		time.Sleep(time.Second)
		lead := c.leader(alive)
		if round == 1 && firstTick.KeeperID != c.ids[lead] {
			t.Logf("the first tick ran on %s, but %s leads now (leadership moved meanwhile)", firstTick.KeeperID, c.ids[lead])
		}
		c.procs[lead].Signal(syscall.SIGKILL)
		killed := time.Now()
		c.procs[lead].Wait(10 * time.Second)
		alive = slices.DeleteFunc(alive, func(i int) bool { return i == lead })
		next := -1
		for next < 0 && time.Since(killed) < 15*time.Second {
			next = c.leaderOrNone(alive)
			time.Sleep(20 * time.Millisecond)
		}
		failover := time.Since(killed)
		if next < 0 {
			t.Fatalf("round %d: no keeper leads 15 s after the leader %s was killed", round, c.ids[lead])
		}
		c.waitCleaned(lead, killed)
		cleaned := time.Since(killed)
		t.Logf("round %d: leader %s killed; %s leads after %s; its runs, tasks and souls cleaned up after %s",
			round, c.ids[lead], c.ids[next], failover.Round(time.Millisecond), cleaned.Round(time.Millisecond))
		if cleaned > 10*time.Second {
			t.Errorf("round %d: cleanup took %s, want under 10 s", round, cleaned)
		}
	}
	survivor := alive[0]

	// Every run ends; no incarnation is left applying.
	for _, id := range runs {
		testutil.WaitFor(t, 60*time.Second, func() bool {
			r, err := c.st.GetRun(ctx, id)
			return err == nil && terminal(r.Status)
		}, "run %s to end", id)
	}
	incs, err := c.st.ListIncarnations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range incs {
		if inc.Status != store.IncarnationReady && inc.Status != store.IncarnationErrorLocked {
			t.Errorf("incarnation %s is %s", inc.Name, inc.Status)
		}
	}
	// Every soul reconnects, to the survivor; none stays on a dead keeper.
	testutil.WaitFor(t, 30*time.Second, func() bool {
		all, err := c.st.ListSouls(ctx, store.SoulFilter{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range all {
			if s.Status == store.SoulConnected && s.KeeperID == c.ids[survivor] {
				n++
			}
		}
		return n == len(c.souls)
	}, "every soul connected to the survivor %s", c.ids[survivor])
	// The dead keepers' Checker tasks failed, naming the death; the
	// survivor's ran to their end.
	lingering[firstTick.ID] = firstTick.KeeperID
	for id, kid := range lingering {
		var task store.CheckerTask
		testutil.WaitFor(t, 40*time.Second, func() bool {
			task, err = c.st.GetCheckerTask(ctx, id)
			return err == nil && checkerTerminal(task.Status)
		}, "task %s (on %s) to end", id, kid)
		switch {
		case kid == c.ids[survivor] && task.Status != checker.StatusSuccess:
			t.Errorf("task %s on the survivor %s: %s (%s), want SUCCESS", id, kid, task.Status, task.RunError)
		case kid != c.ids[survivor] && (task.Status != checker.StatusFailure || !strings.Contains(task.RunError, kid+" died")):
			t.Errorf("task %s on the dead %s: %s (%s), want FAILURE naming its death", id, kid, task.Status, task.RunError)
		}
	}

	// The survivor runs the next tick on time; no tick ever ran twice.
	testutil.WaitFor(t, 65*time.Second, func() bool {
		for _, task := range c.scheduled(sc.ID) {
			if task.KeeperID == c.ids[survivor] {
				return true
			}
		}
		return false
	}, "the survivor to run a tick")
	seen := map[time.Time]string{}
	for _, task := range c.scheduled(sc.ID) {
		tick := task.CreatedAt.Truncate(time.Minute)
		if prev, dup := seen[tick]; dup {
			t.Errorf("tick %s ran twice: tasks %s and %s", tick, prev, task.ID)
		}
		seen[tick] = task.ID
		if late := task.CreatedAt.Sub(tick); late > 2*time.Second {
			t.Errorf("tick %s started %s late (task %s on %s)", tick, late, task.ID, task.KeeperID)
		}
	}
	if len(seen) < 2 {
		t.Errorf("%d ticks ran, want the killed leader's and the survivor's", len(seen))
	}
	t.Logf("%d runs and %d Checker tasks ended, %d ticks ran once each; the test took %s after the keepers started",
		len(runs), len(lingering), len(seen), time.Since(began).Round(time.Second))
}

// checkerTerminal reports whether a Checker task status is final.
func checkerTerminal(status string) bool {
	switch status {
	case checker.StatusSuccess, checker.StatusFailure, checker.StatusCancelled, checker.StatusTimeout:
		return true
	}
	return false
}

func startChaos(t *testing.T, keepers, souls int) *chaos {
	t.Helper()
	c := &chaos{t: t, ctx: context.Background(), dir: t.TempDir(), dbURL: pgtest.FreshDatabase(t)}
	var cfgs []config.Keeper
	for i := range keepers {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(c.dir, fmt.Sprintf("keeper-%d", i+1))
		cfg.KeeperID = fmt.Sprintf("keeper-%d", i+1)
		cfg.DatabaseURL = c.dbURL
		cfgs = append(cfgs, cfg)
		c.ids = append(c.ids, cfg.KeeperID)
		c.addrs = append(c.addrs, testutil.FreeAddr(t))
	}
	res, err := keeper.Init(c.ctx, keeper.InitOptions{Keeper: cfgs[0]})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range cfgs[1:] {
		shareKeeperFiles(t, cfgs[0], cfg)
	}
	for i, cfg := range cfgs {
		c.procs = append(c.procs, testutil.StartProcess(t, cfg.KeeperID, keeperBin, "serve", "--data-dir", cfg.DataDir,
			"--database-url", c.dbURL, "--keeper-id", cfg.KeeperID, "--listen", c.addrs[i], "--shutdown-timeout", "5s"))
		cl, err := apiclient.New("http://"+c.addrs[i], res.Token.Token)
		if err != nil {
			t.Fatal(err)
		}
		c.clients = append(c.clients, cl)
	}
	for i, cl := range c.clients {
		testutil.WaitFor(t, 20*time.Second, func() bool { return cl.Ready(c.ctx) == nil }, "%s ready", c.ids[i])
	}
	if c.st, err = postgres.Open(c.ctx, c.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.st.Close() })
	c.lb = startBalancer(t, c.addrs)
	jt, err := c.clients[0].CreateJoinToken(c.ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"chaos"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range souls {
		sid := fmt.Sprintf("soul-%d", i+1)
		root := filepath.Join(c.dir, sid, "root")
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		testutil.StartProcess(t, sid, soulBin, "run", "--keeper", "https://"+c.lb.addr(), "--sid", sid,
			"--data-dir", filepath.Join(c.dir, sid), "--root", root, "--join-token", jt.Token,
			"--reconnect-min", "50ms", "--reconnect-max", "300ms")
		c.souls = append(c.souls, sid)
	}
	held := map[string]int{}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		all, err := c.st.ListSouls(c.ctx, store.SoulFilter{Status: store.SoulConnected})
		if err != nil {
			t.Fatal(err)
		}
		clear(held)
		for _, s := range all {
			held[s.KeeperID]++
		}
		return len(all) == souls
	}, "%d souls connected", souls)
	t.Logf("souls per keeper: %v", held)
	return c
}

// startRun creates incarnation name (every soul a member) through keeper
// i and returns its run, once it runs.
func (c *chaos) startRun(i int, name string) string {
	c.t.Helper()
	acc, err := c.clients[i].CreateIncarnation(c.ctx, apitypes.CreateIncarnationRequest{Name: name, Service: "chaos", Covens: []string{"chaos"}})
	if err != nil {
		c.t.Fatalf("creating %s through %s: %v", name, c.ids[i], err)
	}
	return acc.ApplyID
}

// leaderOrNone returns which of the keepers alive holds the leader lock,
// or -1.
func (c *chaos) leaderOrNone(alive []int) int {
	c.t.Helper()
	conn, err := pgx.Connect(c.ctx, c.dbURL)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close(c.ctx)
	var app string
	err = conn.QueryRow(c.ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()
		AND a.application_name LIKE 'soulstack-leader %'`).Scan(&app)
	if errors.Is(err, pgx.ErrNoRows) {
		return -1
	}
	if err != nil {
		c.t.Fatal(err)
	}
	for _, i := range alive {
		if app == "soulstack-leader "+c.ids[i] {
			return i
		}
	}
	return -1
}

func (c *chaos) leader(alive []int) int {
	c.t.Helper()
	lead := -1
	testutil.WaitFor(c.t, 15*time.Second, func() bool { lead = c.leaderOrNone(alive); return lead >= 0 }, "a leader")
	return lead
}

// waitCleaned waits until nothing of dead keeper i is left: no row, no
// unfinished run, no unfinished Checker task, no soul connected to it.
func (c *chaos) waitCleaned(i int, killed time.Time) {
	c.t.Helper()
	id := c.ids[i]
	var left string
	for {
		var what []string
		if _, err := c.st.GetKeeper(c.ctx, id); err == nil {
			what = append(what, "its row")
		}
		runs, err := c.st.ListRuns(c.ctx, "", 0)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, r := range runs {
			if r.KeeperID == id && !terminal(r.Status) {
				what = append(what, "run "+r.ID+" "+r.Status)
			}
		}
		tasks, err := c.st.ListCheckerTasks(c.ctx, "", 0)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, task := range tasks {
			if task.KeeperID == id && !checkerTerminal(task.Status) {
				what = append(what, "checker task "+task.ID+" "+task.Status)
			}
		}
		souls, err := c.st.ListSouls(c.ctx, store.SoulFilter{Status: store.SoulConnected})
		if err != nil {
			c.t.Fatal(err)
		}
		for _, s := range souls {
			if s.KeeperID == id {
				what = append(what, "soul "+s.SID+" connected")
			}
		}
		if len(what) == 0 {
			return
		}
		left = strings.Join(what, ", ")
		if time.Since(killed) > 20*time.Second {
			c.t.Fatalf("20 s after %s was killed, left: %s", id, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scheduled lists the tasks schedule id started.
func (c *chaos) scheduled(id string) []store.CheckerTask {
	c.t.Helper()
	all, err := c.st.ListCheckerTasks(c.ctx, "tick", 0)
	if err != nil {
		c.t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(t store.CheckerTask) bool { return t.ScheduleID != id })
}

// balancer is a TCP load balancer in front of the keepers: each new
// connection goes to the next keeper that accepts it (round robin), as a
// VIP or DNS name fronting several keepers would send it.
type balancer struct {
	ln      net.Listener
	targets []string
	mu      sync.Mutex
	next    int
	conns   []net.Conn
	down    bool
	wg      sync.WaitGroup
}

// setDown cuts every forwarded connection and refuses new ones (true), as
// a dead server or a cut network would, or lets them through again.
func (b *balancer) setDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
	if down {
		for _, c := range b.conns {
			c.Close()
		}
		b.conns = nil
	}
}

func startBalancer(t *testing.T, targets []string) *balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{ln: ln, targets: targets}
	b.wg.Go(b.serve)
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *balancer) addr() string { return b.ln.Addr().String() }

func (b *balancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		start, down := b.next, b.down
		b.next++
		b.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		var up net.Conn
		for k := range b.targets {
			up, err = net.DialTimeout("tcp", b.targets[(start+k)%len(b.targets)], time.Second)
			if err == nil {
				break
			}
		}
		if up == nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		if b.down {
			// Cut while this connection was being dialed: setDown did not
			// see it, so it must not get through.
			b.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		b.conns = append(b.conns, c, up)
		b.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
			b.wg.Go(func() {
				_, _ = io.Copy(pair[0], pair[1])
				pair[0].Close()
				pair[1].Close()
			})
		}
	}
}
