package keeper_test

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// blackHole forwards TCP connections to a target; cut makes it drop what
// passes both ways without closing anything, as a cut link does (no FIN,
// no reset); heal forwards again, and a side that closed meanwhile is
// closed on the other side only then.
type blackHole struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	cond    *sync.Cond
	cutOff  bool
	dropped atomic.Int64 // bytes from the soul dropped while cut
	wg      sync.WaitGroup
	conns   []net.Conn
}

func startBlackHole(t *testing.T, target string) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln, target: target}
	b.cond = sync.NewCond(&b.mu)
	b.wg.Go(b.serve)
	t.Cleanup(func() {
		b.heal()
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

func (b *blackHole) cut() { b.mu.Lock(); b.cutOff = true; b.mu.Unlock() }

func (b *blackHole) heal() {
	b.mu.Lock()
	b.cutOff = false
	b.cond.Broadcast()
	b.mu.Unlock()
}

// waitHealed blocks while the link is cut; it reports whether it was.
func (b *blackHole) waitHealed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.cutOff
	for b.cutOff {
		b.cond.Wait()
	}
	return was
}

func (b *blackHole) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		if b.waitHealed() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", b.target)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		b.conns = append(b.conns, c, up)
		b.mu.Unlock()
		b.wg.Go(func() { b.pipe(up, c, true) })
		b.wg.Go(func() { b.pipe(c, up, false) })
	}
}

// pipe copies src to dst, dropping what it reads while cut.
func (b *blackHole) pipe(dst, src net.Conn, fromSoul bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		b.mu.Lock()
		cut := b.cutOff
		b.mu.Unlock()
		if cut && n > 0 {
			if fromSoul {
				b.dropped.Add(int64(n))
			}
			n = 0
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			b.waitHealed() // a close during the cut is not seen before it ends
			dst.Close()
			src.Close()
			return
		}
	}
}

// TestResultFinishedDuringLinkCut (issue 36): with a link cut longer than
// the heartbeat timeout, a task that finished during the cut never reached
// the run record, which said "unreachable" although the host changed. The
// soul's result went into the dead connection. Now the soul keeps what it
// sent on a stream that then broke, delivers it after the next welcome,
// and the run records it as a late result.
func TestResultFinishedDuringLinkCut(t *testing.T) {
	f := inProcessKeeperWith(t, "", func(c *config.Keeper) {
		c.HeartbeatInterval = config.Duration(300 * time.Millisecond)
	})
	bh := startBlackHole(t, f.addr)
	work := t.TempDir()
	started, gate, out := filepath.Join(work, "started"), filepath.Join(work, "go"), filepath.Join(work, "changed")
	// The result carries ~40 KB of stdout, so the test can see it was
	// sent into the cut link (bytes dropped), not after it healed.
	script := "touch " + started + "; while [ ! -e " + gate + " ]; do sleep 0.05; done; echo changed > " + out +
		"; head -c 30000 /dev/urandom | base64 -w0"
	repo := catalogtest.NewRepo(t)
	repo.Commit(map[string]string{
		"service.yml": "name: cut\ndescription: A task that ends during a link cut (internal/keeper/linkcut_test.go).\n",
		"scenario/create/main.yml": `tasks:
  - name: Change the host
    module: core.exec.run
    params:
      cmd: sh
      args: ["-c", "` + script + `"]
`,
	}, "cut service")
	if _, err := f.c.RegisterService(f.ctx, apitypes.RegisterServiceRequest{Name: "cut", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}
	jt, err := f.c.CreateJoinToken(f.ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"cut"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(f.dir, "soul-cut", "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.StartProcess(t, "soul-cut", soulBin, "run", "--keeper", "https://"+bh.ln.Addr().String(), "--sid", "soul-cut",
		"--data-dir", filepath.Join(f.dir, "soul-cut"), "--root", root, "--join-token", jt.Token,
		"--reconnect-min", "50ms", "--reconnect-max", "300ms")
	f.waitSouls(store.SoulConnected, "soul-cut")

	acc, err := f.c.CreateIncarnation(f.ctx, apitypes.CreateIncarnationRequest{Name: "cut-1", Service: "cut", Covens: []string{"cut"}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(started); return err == nil }, "the task to start")

	bh.cut()
	f.waitSouls(store.SoulDisconnected, "soul-cut")
	failed := f.awaitRun(acc.ApplyID, 30*time.Second)
	if h := hosts(failed, "Change the host")["soul-cut"]; h.Status != "unreachable" {
		t.Fatalf("during the cut the host is %q, want unreachable", h.Status)
	}
	before := bh.dropped.Load()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { return bh.dropped.Load()-before > 20000 }, "the result to be sent into the cut link")
	bh.heal()
	f.waitSouls(store.SoulConnected, "soul-cut")

	testutil.WaitFor(t, 20*time.Second, func() bool {
		r, err := f.c.GetRun(f.ctx, acc.ApplyID)
		return err == nil && hosts(r, "Change the host")["soul-cut"].Status != "unreachable"
	}, "the late result on the run")
	r, err := f.c.GetRun(f.ctx, acc.ApplyID)
	if err != nil {
		t.Fatal(err)
	}
	if h := hosts(r, "Change the host")["soul-cut"]; !h.Changed || len(h.Stdout) < 20000 {
		t.Fatalf("the late result: %s changed=%v, %d bytes of stdout", h.Status, h.Changed, len(h.Stdout))
	}
}
