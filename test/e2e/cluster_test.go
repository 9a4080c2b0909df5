package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

const (
	// labName is fixed (per flavour: labName-sysv), so a run after a
	// crashed one removes its leftovers (lab.New cleans up an earlier lab of
	// the same name).
	labName = "e2e-redis"
	// hostCount is the size of the Redis cluster: a primary, three replicas.
	hostCount = 4
	// coven is the label the join token gives every soul; the incarnation
	// targets it.
	coven = "redis-e2e"
	// soulDataDir is the soul's data directory inside a sysv host; on
	// systemd hosts it is the packaged unit's, /var/lib/soulstack/soul.
	soulDataDir = "/var/lib/soul"
)

// labPackages are made installable in the hosts: Redis for examples/redis,
// htop for examples/my-service (the first-service guide), nginx, haproxy,
// openssh-server and cron for examples/web, hello as in the lab's own
// tests.
var labPackages = []string{"cron", "haproxy", "hello", "htop", "nginx", "openssh-server", "redis-server", "redis-tools"}

// cluster is a lab with a Keeper on the machine side and a connected soul
// in every host.
type cluster struct {
	// flavour is the hosts' init (lab.FlavourSystemd or lab.FlavourSysV).
	// On systemd hosts the soul is the soulstack-soul unit of the .deb, started and
	// restarted by systemd; on sysv hosts it is a process the test starts.
	flavour string
	lab     *lab.Lab
	keeper  *keeperProc
	api     *apiclient.Client
	// soulURL is the Keeper as the souls reach it (https only).
	soulURL   string
	joinToken string
	// token is the first Archon's (admin) token.
	token  string
	logDir string

	mu    sync.Mutex
	souls map[string]*lab.Proc // by SID (= host name)
}

// newCluster builds a lab of flavour, starts and initializes the Keeper,
// and starts a soul in every host, onboarded with a join token made through
// the API. Everything is torn down when the test ends: the souls and the
// Keeper by PID, then the lab.
func newCluster(t *testing.T, flavour string) *cluster {
	t.Helper()
	name := labName
	if flavour == lab.FlavourSysV {
		name += "-sysv"
	}
	return newClusterOf(t, flavour, name, hostCount, labPackages)
}

// newClusterOf is newCluster for a lab of its own: name (fixed per test,
// so a crashed run's leftovers are cleaned), hosts and packages.
func newClusterOf(t *testing.T, flavour, name string, hostCount int, labPackages []string) *cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	// Two checkouts on one machine run their labs apart: the name is
	// $SOULSTACK_LAB_NAME when set (as test/modules does).
	if n := os.Getenv("SOULSTACK_LAB_NAME"); n != "" {
		name = n
	}
	c := &cluster{flavour: flavour, souls: map[string]*lab.Proc{}, logDir: logDir(t)}

	start := time.Now()
	waitTurn(t, ctx)
	if waited := since(start); waited > time.Second {
		t.Logf("waited %v for another e2e run on this machine to finish", waited)
	}
	start = time.Now()
	l, err := lab.New(ctx, lab.Config{Name: name, Hosts: hostCount, Packages: labPackages, Flavour: flavour})
	if err != nil {
		t.Fatalf("building the lab: %v", err)
	}
	c.lab = l
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	// Runs before the lab closes: the souls of systemd hosts log to the
	// journal, which goes with the lab.
	t.Cleanup(func() { c.saveJournals(t) })
	st := l.Stats()
	t.Logf("lab %s: %d %s hosts up in %v (base %v built=%v, repo %v built=%v, hosts %v)", name, hostCount, flavour,
		since(start), st.Base.Round(time.Millisecond), st.BaseBuilt, st.Repo.Round(time.Millisecond), st.RepoBuilt,
		st.Hosts.Round(time.Millisecond))

	start = time.Now()
	gw := l.GatewayIP()
	c.keeper = newKeeperProc(c.logDir, testutil.FreeAddrOn(t, gw))
	token, err := initKeeper(ctx, c.keeper.dataDir, gw)
	if err != nil {
		t.Fatal(err)
	}
	c.token = token
	t.Cleanup(func() {
		if err := c.keeper.stop(10 * time.Second); err != nil {
			t.Errorf("stopping the keeper: %v", err)
		}
	})
	if err := c.keeper.start(); err != nil {
		t.Fatal(err)
	}
	// The Operator API is plain HTTP here: the listener sniffs, and the
	// traffic never leaves the machine.
	c.api, err = apiclient.New("http://"+c.keeper.addr, token, apiclient.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.soulURL = "https://" + c.keeper.addr
	c.waitKeeperReady(t)
	jt, err := c.api.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{coven}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatalf("creating a join token: %v", err)
	}
	c.joinToken = jt.Token
	t.Logf("keeper (pid %d) ready on %s in %v", c.keeper.pid(), c.keeper.addr, since(start))

	start = time.Now()
	t.Cleanup(func() {
		if err := c.stopSouls(); err != nil {
			t.Error(err)
		}
	})
	for _, h := range l.Hosts() {
		if flavour == lab.FlavourSystemd {
			c.installSoulUnit(t, h)
			continue
		}
		if err := h.CopyIn(soulBin, "/usr/local/bin/soul"); err != nil {
			t.Fatal(err)
		}
		c.startSoul(t, h.Name(), true)
	}
	c.waitSouls(t, store.SoulConnected, c.sids()...)
	t.Logf("%d souls connected in %v", hostCount, since(start))
	// The soulprint says which init the host runs, from the host itself.
	souls, err := c.api.ListSouls(ctx, apitypes.SoulQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range souls {
		id, _ := c.host(t, s.SID).BootID()
		if s.Soulprint["init"] != flavour || s.Soulprint["boot_id"] != id {
			t.Errorf("soulprint of %s: init %v, boot_id %v; want %s, %s", s.SID, s.Soulprint["init"], s.Soulprint["boot_id"], flavour, id)
		}
	}
	return c
}

// turnLock serializes e2e runs on one machine (several engineers, or two
// `make test`, at once): they share the fixed lab name, which lab.New
// refuses while another process holds it. The lock is released when the
// test process ends, however it ends.
const turnLock = "/run/soulstack-e2e.lock"

// waitTurn waits until no other e2e run holds turnLock, and holds it until
// the test ends.
func waitTurn(t *testing.T, ctx context.Context) {
	t.Helper()
	f, err := os.OpenFile(turnLock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("locking %s: %v", turnLock, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("another e2e run held %s too long: %v", turnLock, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// logDir returns a directory for the Keeper's data and every process's
// log. It is removed after a passing test and kept after a failing one,
// whose log tails are printed.
func logDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "soulstack-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
			return
		}
		printLogTails(t, dir)
		t.Logf("keeper data and logs kept in %s", dir)
	})
	return dir
}

// printLogTails logs the end of every *.log file under dir.
func printLogTails(t *testing.T, dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		// The keeper logs every API call; the tests poll.
		lines := slices.DeleteFunc(strings.Split(strings.TrimRight(string(data), "\n"), "\n"),
			func(l string) bool { return strings.Contains(l, `msg="http request"`) })
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		t.Logf("--- last lines of %s:\n%s", path, strings.Join(lines, "\n"))
		return nil
	})
}

// sids returns the SIDs of the hosts, which are their names, sorted.
func (c *cluster) sids() []string {
	var out []string
	for _, h := range c.lab.Hosts() {
		out = append(out, h.Name())
	}
	slices.Sort(out)
	return out
}

// host returns the lab host whose soul has the SID sid.
func (c *cluster) host(t *testing.T, sid string) *lab.Host {
	t.Helper()
	h := c.lab.Host(sid)
	if h == nil {
		t.Fatalf("no host %s", sid)
	}
	return h
}

// resetStartLimits clears systemd's start rate limit of every unit on the
// hosts that are up. The steps restart Redis on one host more often than
// systemd's default StartLimitBurst (5 starts in 10 s) allows — an
// operator does not restart a service five times in ten seconds — and a
// restart refused by the limit ("start of the service was attempted too
// often") would fail the next step for a reason that is the test's tempo.
func (c *cluster) resetStartLimits(t *testing.T) {
	t.Helper()
	for _, sid := range c.sids() {
		_, stderr, err := c.host(t, sid).Exec(t.Context(), "systemctl reset-failed")
		if err != nil && !errors.Is(err, lab.ErrHostDown) {
			t.Fatalf("systemctl reset-failed on %s: %v %s", sid, err, stderr)
		}
	}
}

// startSoul starts `soul run` in host sid. The first start carries the join
// token; later ones rely on the key and the pinned fingerprint the soul
// keeps in its data directory. On systemd hosts it is `systemctl start
// soul`.
func (c *cluster) startSoul(t *testing.T, sid string, join bool) {
	t.Helper()
	if c.flavour == lab.FlavourSystemd {
		if _, _, err := c.host(t, sid).Exec(t.Context(), "systemctl start "+soulUnit); err != nil {
			t.Fatal(err)
		}
		return
	}
	ctx := t.Context()
	argv := []string{"/usr/local/bin/soul", "run", "--keeper", c.soulURL, "--sid", sid, "--data-dir", soulDataDir,
		"--reconnect-min", "100ms", "--reconnect-max", "1s", "--log-level", "debug"}
	if join {
		argv = append(argv, "--join-token", c.joinToken)
	}
	p, err := c.host(t, sid).Start(ctx, argv, filepath.Join(c.logDir, "soul-"+sid+".log"))
	if err != nil {
		t.Fatalf("starting the soul of %s: %v", sid, err)
	}
	if p.PID() == 0 {
		t.Fatalf("the soul of %s exited at once: %v (see %s)", sid, p.Wait(), c.logDir)
	}
	c.mu.Lock()
	c.souls[sid] = p
	c.mu.Unlock()
}

// killSoul kills the soul of host sid with SIGKILL (by PID) and waits until
// it has exited. On systemd hosts it is `kill -9` of the unit's main PID
// (systemd starts it again after the unit's RestartSec).
func (c *cluster) killSoul(t *testing.T, sid string) {
	t.Helper()
	if c.flavour == lab.FlavourSystemd {
		c.soulMainPIDKilled(t, sid)
		return
	}
	c.mu.Lock()
	p := c.souls[sid]
	delete(c.souls, sid)
	c.mu.Unlock()
	if p == nil {
		t.Fatalf("no soul running in %s", sid)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
}

// stopSouls kills every soul still running (test cleanup).
func (c *cluster) stopSouls() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for sid, p := range c.souls {
		if err := p.Kill(); err != nil {
			errs = append(errs, fmt.Errorf("killing the soul of %s: %w", sid, err))
		}
		delete(c.souls, sid)
	}
	return errors.Join(errs...)
}

// waitKeeperReady waits until the Keeper answers /readyz.
func (c *cluster) waitKeeperReady(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	eventually(t, 30*time.Second, "keeper ready on "+c.keeper.addr, func() error {
		if !c.keeper.running() {
			return fmt.Errorf("keeper exited: %v", c.keeper.err)
		}
		return c.api.Ready(ctx)
	})
}

// waitSouls waits until every soul in sids has the given status.
func (c *cluster) waitSouls(t *testing.T, status string, sids ...string) {
	t.Helper()
	ctx := t.Context()
	eventually(t, 30*time.Second, fmt.Sprintf("souls %v %s", sids, status), func() error {
		souls, err := c.api.ListSouls(ctx, apitypes.SoulQuery{})
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, s := range souls {
			got[s.SID] = s.Status
		}
		for _, sid := range sids {
			if got[sid] != status {
				return fmt.Errorf("souls: %v", got)
			}
		}
		return nil
	})
}

// eventually retries f every 100ms until it returns nil, and fails the
// test with f's last error after within.
func eventually(t *testing.T, within time.Duration, what string, f func() error) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("timed out after %v waiting for %s: %v", within, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// registerService registers examples/<name> as service name: the directory
// is copied into a fresh local git repository and committed, and the
// Keeper materializes it over file://.
func (c *cluster) registerService(t *testing.T, name string) apitypes.Service {
	t.Helper()
	ctx := t.Context()
	files := map[string]string{}
	var exec []string // executable files (custom modules' programs) stay so
	src := filepath.Join("..", "..", "examples", name)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		files[filepath.ToSlash(rel)] = string(data)
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o111 != 0 {
			exec = append(exec, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", src, err)
	}
	repo := catalogtest.NewRepo(t)
	commit := repo.CommitExec(files, exec, "examples/"+name)
	svc, err := c.api.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: name, Git: "file://" + repo.Dir, Ref: "master"})
	if err != nil {
		t.Fatalf("registering %s: %v", name, err)
	}
	if svc.Commit != commit {
		t.Fatalf("service %s at commit %s, want %s", name, svc.Commit, commit)
	}
	return svc
}

// since is the time since start, rounded for logs.
func since(start time.Time) time.Duration { return time.Since(start).Round(time.Millisecond) }
