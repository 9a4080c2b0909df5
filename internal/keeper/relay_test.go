package keeper_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// relayFiller makes the files of the relay service larger than NOTIFY's
// 8000-byte payload limit: the work carrying them must travel in a row.
var relayFiller = strings.Repeat("relayed through PostgreSQL, not through NOTIFY\n", 300) // 14.1 kB

// relayService is a service whose create run writes, on every host, a file
// rendered from a 14 kB template and, through a destiny bundle, one from a
// 42 kB template, then probes both with a command.
var relayService = map[string]string{
	"service.yml": `name: relay
description: Two keepers, one database (internal/keeper/relay_test.go).
state_schema:
  type: object
  properties:
    hosts:
      type: integer
  required: [hosts]
  additionalProperties: false
`,
	"scenario/create/main.yml": `state_changes:
  sets:
    hosts: "${ size(register.probe) }"

tasks:
  - name: Base directory
    module: core.file.directory
    params:
      path: /srv/relay
      mode: "0755"

  - name: Big file
    module: core.file.rendered
    params:
      path: /srv/relay/big.txt
      template: templates/big.txt.tmpl
      mode: "0644"

  - name: Big destiny
    apply:
      destiny: blob
      input:
        dir: /srv/relay

  - name: Probe
    module: core.exec.run
    register: probe
    changed_when: false
    params:
      cmd: wc
      args: ["-c", "./srv/relay/big.txt", "./srv/relay/blob.txt"]
      cwd: /
`,
	"scenario/create/templates/big.txt.tmpl": "host {{ .soulprint.self.sid }}\n" + relayFiller,
	"destiny/blob/main.yml": `input:
  dir:
    type: string
    required: true

tasks:
  - name: Blob
    module: core.file.rendered
    register: blob
    params:
      path: "${ input.dir }/blob.txt"
      template: templates/blob.txt.tmpl
      mode: "0644"

output:
  blob_changed: "${ register.blob.changed }"
`,
	"destiny/blob/templates/blob.txt.tmpl": "blob of {{ .soulprint.self.sid }}\n" + strings.Repeat(relayFiller, 3),
}

const relayInc = "relay-1"

// twoKeepers is two keepers on one PostgreSQL database and the real soul
// processes connected to them. keeper-1 runs in this process; keeper-2
// too, or as the real binary (so that a test can SIGKILL it).
type twoKeepers struct {
	t       *testing.T
	ctx     context.Context
	dir     string
	ids     [2]string
	keepers [2]*keeper.Keeper // nil for a binary keeper
	addrs   [2]string
	clients [2]*apiclient.Client
	join    string            // a join token of coven relay
	serve   []string          // `keeper serve` arguments of a binary keeper-2
	binary  *testutil.Process // the binary keeper-2
	souls   map[string]*testutil.Process
}

// startTwoKeepers initializes a fresh database with keeper-1, gives
// keeper-2 the same TLS identity, and serves both until the test ends;
// with binary set keeper-2 is the real binary.
func startTwoKeepers(t *testing.T, binary bool) *twoKeepers {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.FreshDatabase(t)
	c := &twoKeepers{t: t, ctx: ctx, dir: t.TempDir(), souls: map[string]*testutil.Process{}}
	var cfgs [2]config.Keeper
	for i := range cfgs {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(c.dir, fmt.Sprintf("keeper-%d", i+1))
		cfg.KeeperID = fmt.Sprintf("keeper-%d", i+1)
		cfg.DatabaseURL = dbURL
		cfg.HeartbeatInterval = config.Duration(time.Second)
		cfg.ShutdownTimeout = config.Duration(5 * time.Second)
		cfgs[i] = cfg
		c.ids[i] = cfg.KeeperID
	}
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfgs[0]})
	if err != nil {
		t.Fatal(err)
	}
	shareKeeperFiles(t, cfgs[0], cfgs[1])
	for i, cfg := range cfgs {
		if i == 1 && binary {
			c.addrs[1] = testutil.FreeAddr(t)
			c.serve = []string{"serve", "--data-dir", cfg.DataDir, "--database-url", dbURL, "--keeper-id", cfg.KeeperID,
				"--listen", c.addrs[1], "--shutdown-timeout", "5s"}
			cl, err := apiclient.New("http://"+c.addrs[1], res.Token.Token)
			if err != nil {
				t.Fatal(err)
			}
			c.clients[1] = cl
			c.startBinary()
			continue
		}
		k, addr := serveKeeper(t, cfg, cfg.KeeperID)
		cl, err := apiclient.New("http://"+addr, res.Token.Token)
		if err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 15*time.Second, func() bool { return cl.Ready(ctx) == nil }, "%s ready", cfg.KeeperID)
		testutil.WaitFor(t, 10*time.Second, k.Relay().Listening, "%s's relay to listen", cfg.KeeperID)
		c.keepers[i], c.addrs[i], c.clients[i] = k, addr, cl
	}
	jt, err := c.clients[0].CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"relay"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	c.join = jt.Token
	return c
}

// startBinary starts (or restarts) the binary keeper-2 and waits until it
// is ready.
func (c *twoKeepers) startBinary() {
	c.t.Helper()
	c.binary = testutil.StartProcess(c.t, "keeper-2", keeperBin, c.serve...)
	testutil.WaitFor(c.t, 15*time.Second, func() bool { return c.clients[1].Ready(c.ctx) == nil }, "keeper-2 ready")
}

func (c *twoKeepers) root(sid string) string { return filepath.Join(c.dir, sid, "root") }

// startSoul runs soul sid connected to keeper i (0 or 1) and waits until
// the store shows it connected there.
func (c *twoKeepers) startSoul(sid string, i int) {
	c.t.Helper()
	if err := os.MkdirAll(c.root(sid), 0o755); err != nil {
		c.t.Fatal(err)
	}
	c.souls[sid] = testutil.StartProcess(c.t, "soul "+sid, soulBin, "run", "--keeper", "https://"+c.addrs[i], "--sid", sid,
		"--data-dir", filepath.Join(c.dir, sid), "--root", c.root(sid), "--join-token", c.join,
		"--reconnect-min", "50ms", "--reconnect-max", "300ms")
	want := c.ids[i]
	testutil.WaitFor(c.t, 20*time.Second, func() bool {
		s, err := c.clients[0].GetSoul(c.ctx, sid)
		return err == nil && s.Status == store.SoulConnected && s.KeeperID == want
	}, "soul %s connected to %s", sid, want)
}

func (c *twoKeepers) killSoul(sid string) {
	c.t.Helper()
	p := c.souls[sid]
	if err := p.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	p.Wait(10 * time.Second)
}

func (c *twoKeepers) file(sid, path string) string {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.root(sid), path))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

// awaitRun polls keeper i's API until run id ended.
func (c *twoKeepers) awaitRun(i int, id string) apitypes.RunDetail {
	c.t.Helper()
	var r apitypes.RunDetail
	testutil.WaitFor(c.t, 60*time.Second, func() bool {
		var err error
		r, err = c.clients[i].GetRun(c.ctx, id)
		return err == nil && terminal(r.Status)
	}, "run %s to end", id)
	return r
}

// noRelayRows fails when relay rows are left behind.
func (c *twoKeepers) noRelayRows() {
	c.t.Helper()
	rows, err := c.keepers[0].Store().ListRelayBatches(c.ctx, store.RelayFilter{})
	if err != nil {
		c.t.Fatal(err)
	}
	if len(rows) != 0 {
		c.t.Errorf("relay rows left behind: %+v", rows)
	}
}

// TestRelayTwoKeepers runs two keepers on one PostgreSQL database with
// soul-a connected to keeper-1 and soul-b to keeper-2: a run created
// through keeper-1 reaches both (soul-b's work, with files beyond NOTIFY's
// payload limit, relayed through keeper-2) and commits; a killed soul-b is
// unreachable at once; soul-b reconnected to keeper-1 serves again. It
// measures the relay's round trip against the local gateway's.
func TestRelayTwoKeepers(t *testing.T) {
	c := startTwoKeepers(t, false)
	ctx := c.ctx
	c.startSoul("soul-a", 0)
	c.startSoul("soul-b", 1)
	r := c.createRelayed()
	both := []string{"soul-a", "soul-b"}
	for _, task := range []string{"Base directory", "Big file", "Big destiny", "Probe"} {
		hs := hosts(r, task)
		if got := sortedKeys(hs); !slices.Equal(got, both) {
			t.Errorf("task %q ran on %v, want %v", task, got, both)
		}
		for sid, h := range hs {
			if h.Status == string(domain.StatusFailed) || h.Status == string(domain.StatusUnreachable) {
				t.Errorf("task %q on %s: %s %s", task, sid, h.Status, h.Msg)
			}
		}
	}
	for _, sid := range both {
		if got, want := c.file(sid, "srv/relay/big.txt"), "host "+sid+"\n"+relayFiller; got != want {
			t.Errorf("%s:/srv/relay/big.txt has %d bytes, want %d", sid, len(got), len(want))
		}
		if got, want := c.file(sid, "srv/relay/blob.txt"), "blob of "+sid+"\n"+strings.Repeat(relayFiller, 3); got != want {
			t.Errorf("%s:/srv/relay/blob.txt has %d bytes, want %d", sid, len(got), len(want))
		}
		if p := hosts(r, "Probe")[sid]; !strings.Contains(p.Stdout, "total") {
			t.Errorf("probe on %s: %q", sid, p.Stdout)
		}
		if out := destinyOutput(hosts(r, "Big destiny")[sid]); out["blob_changed"] != true {
			t.Errorf("destiny output on %s: %v", sid, out)
		}
	}
	inc, err := c.clients[1].GetIncarnation(ctx, relayInc) // either keeper reads it
	if err != nil {
		t.Fatal(err)
	}
	if inc.Status != store.IncarnationReady || inc.State["hosts"] != float64(2) {
		t.Fatalf("after create: %s %v", inc.Status, inc.State)
	}
	if s, _ := c.clients[0].GetSoul(ctx, "soul-b"); s.KeeperID != c.ids[1] {
		t.Fatalf("soul-b is held by %q: its work was not relayed", s.KeeperID)
	}
	c.noRelayRows()

	t.Run("a megabyte crosses", func(t *testing.T) {
		content := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
		w := dispatch.Work{RunID: "direct", TaskID: "direct/mega/soul-b/1", Timeout: 30 * time.Second,
			Call: &dispatch.Call{Module: "core.file.present", Params: map[string]any{"path": "/srv/relay/mega.txt", "content": content}}}
		res := c.keepers[0].Relay().Dispatch(ctx, []dispatch.Request{{SID: "soul-b", Work: w}}, nil)["soul-b"]
		if res.Failed || res.Unreachable || !res.Changed {
			t.Fatalf("1 MiB file through the relay: %+v", res)
		}
		if got := c.file("soul-b", "srv/relay/mega.txt"); got != content {
			t.Fatalf("mega.txt has %d bytes, want %d", len(got), len(content))
		}
	})

	t.Run("latency", func(t *testing.T) {
		const n = 100
		measure := func(sid string) []time.Duration {
			lat := make([]time.Duration, 0, n)
			for i := range n + 10 {
				w := dispatch.Work{RunID: "latency", TaskID: fmt.Sprintf("latency/%s/%d", sid, i), Timeout: 10 * time.Second,
					Call: &dispatch.Call{Module: "core.test.echo", Params: map[string]any{"message": "ping"}}}
				began := time.Now()
				res := c.keepers[0].Relay().Dispatch(ctx, []dispatch.Request{{SID: sid, Work: w}}, nil)[sid]
				if res.Failed || res.Unreachable {
					t.Fatalf("echo on %s: %+v", sid, res)
				}
				if i >= 10 { // warm-up excluded
					lat = append(lat, time.Since(began))
				}
			}
			slices.Sort(lat)
			return lat
		}
		local, relayed := measure("soul-a"), measure("soul-b")
		t.Logf("echo from keeper-1, %d sequential calls: local soul-a p50 %s p90 %s p99 %s; relayed soul-b (via keeper-2) p50 %s p90 %s p99 %s; relay overhead at p50 %s",
			n, local[n/2], local[n*9/10], local[n*99/100], relayed[n/2], relayed[n*9/10], relayed[n*99/100], relayed[n/2]-local[n/2])
	})
	c.noRelayRows()

	t.Run("killed soul unreachable at once", func(t *testing.T) {
		c.killSoul("soul-b")
		began := time.Now()
		acc, err := c.clients[0].StartRun(ctx, relayInc, apitypes.StartRunRequest{Scenario: "create"})
		if err != nil {
			t.Fatal(err)
		}
		r := c.awaitRun(0, acc.ApplyID)
		took := time.Since(began)
		if r.Status != store.RunFailed || took > 5*time.Second {
			t.Fatalf("run with soul-b dead: %s after %s (%s)\n%s", r.Status, took, r.Error, runJSON(r))
		}
		base := hosts(r, "Base directory")
		if base["soul-b"].Status != string(domain.StatusUnreachable) || base["soul-a"].Status == string(domain.StatusUnreachable) {
			t.Fatalf("results with soul-b dead: %+v", base)
		}
		t.Logf("the run through keeper-1 with soul-b (keeper-2) killed failed in %s: %s", took.Round(time.Millisecond), base["soul-b"].Msg)
		if inc, _ := c.clients[0].GetIncarnation(ctx, relayInc); inc.Status != store.IncarnationErrorLocked || inc.State["hosts"] != float64(2) {
			t.Errorf("after the unreachable run: %s %v", inc.Status, inc.State)
		}
	})

	t.Run("soul moves to the other keeper", func(t *testing.T) {
		c.startSoul("soul-b", 0)
		if _, err := c.clients[1].UnlockIncarnation(ctx, relayInc, "soul-b restarted on keeper-1"); err != nil {
			t.Fatal(err)
		}
		// Started through keeper-2 this time: now soul-a's and soul-b's
		// work is relayed to keeper-1.
		acc, err := c.clients[1].StartRun(ctx, relayInc, apitypes.StartRunRequest{Scenario: "create"})
		if err != nil {
			t.Fatal(err)
		}
		if r := c.awaitRun(1, acc.ApplyID); r.Status != store.RunSucceeded || len(hosts(r, "Probe")) != 2 {
			t.Fatalf("run through keeper-2 with both souls on keeper-1: %s (%s)\n%s", r.Status, r.Error, runJSON(r))
		}
	})
	c.noRelayRows()
}

// createRelayed registers the relay service and creates its incarnation
// through keeper-1; the create run must succeed.
func (c *twoKeepers) createRelayed() apitypes.RunDetail {
	c.t.Helper()
	repo := catalogtest.NewRepo(c.t)
	repo.Commit(relayService, "relay service")
	if _, err := c.clients[0].RegisterService(c.ctx, apitypes.RegisterServiceRequest{Name: "relay", Git: repo.Dir, Ref: "master"}); err != nil {
		c.t.Fatal(err)
	}
	acc, err := c.clients[0].CreateIncarnation(c.ctx, apitypes.CreateIncarnationRequest{Name: relayInc, Service: "relay", Covens: []string{"relay"}})
	if err != nil {
		c.t.Fatal(err)
	}
	r := c.awaitRun(0, acc.ApplyID)
	if r.Status != store.RunSucceeded {
		c.t.Fatalf("create run %s: %s (%s)\n%s", r.ID, r.Status, r.Error, runJSON(r))
	}
	return r
}

// TestRelayKeeperKilled SIGKILLs the real keeper-2 binary holding soul-b's
// stream: the store still shows soul-b connected to it, yet a run through
// keeper-1 finds soul-b unreachable at once (keeper-2's relay lock went
// with its connection). keeper-2 restarted, soul-b reconnects to it and the
// next run through keeper-1 commits.
func TestRelayKeeperKilled(t *testing.T) {
	c := startTwoKeepers(t, true)
	ctx := c.ctx
	c.startSoul("soul-a", 0)
	c.startSoul("soul-b", 1)
	if r := c.createRelayed(); len(hosts(r, "Probe")) != 2 {
		t.Fatalf("create through keeper-1 with soul-b on the keeper-2 binary:\n%s", runJSON(r))
	}

	if err := c.binary.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.binary.Wait(10 * time.Second)
	// Whatever the store still says about soul-b (connected to keeper-2
	// until the leader cleans up, seconds later), a run finds it
	// unreachable at once.
	began := time.Now()
	acc, err := c.clients[0].StartRun(ctx, relayInc, apitypes.StartRunRequest{Scenario: "create"})
	if err != nil {
		t.Fatal(err)
	}
	r := c.awaitRun(0, acc.ApplyID)
	took := time.Since(began)
	base := hosts(r, "Base directory")
	if r.Status != store.RunFailed || took > 5*time.Second || base["soul-b"].Status != string(domain.StatusUnreachable) ||
		!strings.Contains(base["soul-b"].Msg, "keeper-2") || base["soul-a"].Status == string(domain.StatusUnreachable) {
		t.Fatalf("run with keeper-2 killed: %s after %s\n%s", r.Status, took, runJSON(r))
	}
	t.Logf("the run through keeper-1 with keeper-2 killed failed in %s: %s", took.Round(time.Millisecond), base["soul-b"].Msg)

	c.startBinary()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		s, err := c.clients[0].GetSoul(ctx, "soul-b")
		return err == nil && s.Status == store.SoulConnected && s.KeeperID == c.ids[1] && s.LastSeen.After(began)
	}, "soul-b to reconnect to the restarted keeper-2")
	if _, err := c.clients[0].UnlockIncarnation(ctx, relayInc, "keeper-2 restarted"); err != nil {
		t.Fatal(err)
	}
	acc, err = c.clients[0].StartRun(ctx, relayInc, apitypes.StartRunRequest{Scenario: "create"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.awaitRun(0, acc.ApplyID); r.Status != store.RunSucceeded {
		t.Fatalf("run after keeper-2's restart: %s (%s)\n%s", r.Status, r.Error, runJSON(r))
	}
	c.noRelayRows()
}
