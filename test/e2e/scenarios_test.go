package e2e

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// Task names of examples/redis, as the run record shows them.
const (
	taskInstall        = "Install Redis"
	taskCreateRestart  = "Restart Redis because its config changed"
	taskRestartProbe   = "Detect actual redis role per host"
	taskRestartWaves   = "Rolling restart of replicas, two at a time"
	taskRollProbe      = "Detect actual replication role per host"
	taskRender         = "Render redis.conf"
	taskReplicaRestart = "Restart Redis because config changed"
	taskReplicaHealth  = "Wait until the replica is healthy again"
	taskMasterRender   = "Render redis.conf on the master"
	taskMasterRestart  = "Restart the master because config changed"
)

// maxMemoryBytes is what Redis reports for a maxmemory of n megabytes.
func maxMemoryBytes(mb int) string { return strconv.Itoa(mb << 20) }

// requireOutcome fails the test now unless the run ended with status.
func requireOutcome(t *testing.T, r apitypes.RunDetail, status string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("run ended %s (%s), want %s\n%s", r.Status, r.Error, status, describe(r))
	}
}

// testCreate creates the incarnation on all four hosts: Redis installed,
// configured and replicating from the first host by SID.
func (c *cluster) testCreate(t *testing.T) {
	r := c.run(t, "create", nil)
	requireOutcome(t, r, store.RunSucceeded)
	all, primary := c.sids(), c.primary()
	assertEqual(t, "hosts that installed Redis", hostsOf(task(r, taskInstall), changed), all)
	assertEqual(t, "hosts restarted for their new config", hostsOf(task(r, taskCreateRestart), changed), all)

	inc := c.incarnation(t)
	assertEqual(t, "status", inc.Status, store.IncarnationReady)
	assertEqual(t, "members", inc.Members, all)
	version := infoFields(c.redisCLI(t, primary, "info", "server"))["redis_version"]
	want := map[string]any{
		"redis_version": version,
		"primary":       primary,
		"primary_ip":    c.host(t, primary).IP(),
		"max_memory":    "64mb",
	}
	assertEqual(t, "state", inc.State, want)

	c.assertRoles(t, primary)
	c.assertReplicating(t, primary)
	live, _ := c.maxMemories(t)
	assertEqual(t, "live maxmemory", live, uniform(all, maxMemoryBytes(64)))
}

// testCreateAgain re-runs create on the converged cluster: no host result
// may report a change, and no Redis restarts.
func (c *cluster) testCreateAgain(t *testing.T) {
	before := c.redisServers(t)
	state := c.incarnation(t).State
	r := c.run(t, "create", nil)
	requireOutcome(t, r, store.RunSucceeded)
	for _, tk := range r.Tasks {
		if got := hostsOf(tk, changed); len(got) > 0 {
			t.Errorf("task %q changed %v on a converged cluster", tk.Name, got)
		}
	}
	assertEqual(t, "hosts that ran the restart handler", hostsOf(task(r, taskCreateRestart), ran), []string(nil))
	assertEqual(t, "state", c.incarnation(t).State, state)
	c.assertNotRestarted(t, before, c.sids()...)
}

// testRestart runs the seed's restart scenario: the replicas restart two at
// a time and the primary is never touched.
func (c *cluster) testRestart(t *testing.T) {
	var pids map[string]int
	if c.flavour == lab.FlavourSystemd {
		pids = c.mainPIDs(t, "redis-server")
	}
	before, start := c.redisServers(t), time.Now()
	r := c.run(t, "restart", nil)
	requireOutcome(t, r, store.RunSucceeded)
	replicas := c.replicas()
	assertEqual(t, "hosts probed", hostsOf(task(r, taskRestartProbe), ran), c.sids())
	restart := task(r, taskRestartWaves)
	assertEqual(t, "hosts the restart ran on", hostsOf(restart, ran), replicas)
	assertEqual(t, "hosts restarted", hostsOf(restart, changed), replicas)
	assertEqual(t, "restart waves", waves(restart), [][]string{replicas[:2], replicas[2:]})
	assertSequentialWaves(t, r, taskRestartWaves)

	after, elapsed := c.redisServers(t), time.Since(start)
	p := c.primary()
	if after[p].runID != before[p].runID || after[p].uptime < before[p].uptime {
		t.Errorf("primary %s: before %+v, after %+v: it was restarted", p, before[p], after[p])
	}
	for _, sid := range replicas {
		if after[sid].runID == before[sid].runID || after[sid].uptime > int(math.Ceil(elapsed.Seconds())) {
			t.Errorf("replica %s: before %+v, after %+v (%v later): it was not restarted", sid, before[sid], after[sid], elapsed)
		}
	}
	t.Logf("uptimes before %v, after %v", uptimes(before), uptimes(after))
	if pids != nil {
		// core.service.restarted went through systemd: the unit's main
		// process is new on every replica, the same on the primary.
		now := c.mainPIDs(t, "redis-server")
		for _, sid := range c.sids() {
			if restarted := now[sid] != pids[sid]; restarted != (sid != p) || now[sid] == 0 {
				t.Errorf("redis-server.service MainPID on %s: %d before, %d after", sid, pids[sid], now[sid])
			}
		}
	}
	c.assertReplicating(t, p)
}

// testRollingRestart rolls a new max_memory: each replica gets the config
// and restarts in its own wave, healthy before the next; the master goes
// last; the new value is committed and live everywhere.
func (c *cluster) testRollingRestart(t *testing.T, mb int) {
	before := c.redisServers(t)
	r := c.run(t, "rolling-restart", map[string]any{"max_memory": strconv.Itoa(mb) + "mb"})
	requireOutcome(t, r, store.RunSucceeded)
	replicas, p := c.replicas(), c.primary()
	oneByOne := [][]string{{replicas[0]}, {replicas[1]}, {replicas[2]}}
	assertEqual(t, "replica configs changed", hostsOf(task(r, taskRender), changed), replicas)
	assertEqual(t, "replica waves", waves(task(r, taskRender)), oneByOne)
	assertEqual(t, "replicas restarted", hostsOf(task(r, taskReplicaRestart), changed), replicas)
	assertEqual(t, "replica restart waves", waves(task(r, taskReplicaRestart)), oneByOne)
	assertSequentialWaves(t, r, taskRender, taskReplicaRestart, taskReplicaHealth)
	assertEqual(t, "master config changed", hostsOf(task(r, taskMasterRender), changed), []string{p})
	assertEqual(t, "master restarted", hostsOf(task(r, taskMasterRestart), changed), []string{p})
	if first, last := startOf(task(r, taskMasterRestart)), endOf(task(r, taskReplicaHealth)); first.Before(last) {
		t.Errorf("the master restarted at %v, before the last replica was healthy at %v", first, last)
	}

	after := c.redisServers(t)
	for _, sid := range c.sids() {
		if after[sid].runID == before[sid].runID {
			t.Errorf("%s was not restarted", sid)
		}
	}
	live, file := c.maxMemories(t)
	assertEqual(t, "live maxmemory", live, uniform(c.sids(), maxMemoryBytes(mb)))
	assertEqual(t, "maxmemory in redis.conf", file, uniform(c.sids(), strconv.Itoa(mb)+"mb"))
	assertEqual[any](t, "committed max_memory", c.incarnation(t).State["max_memory"], strconv.Itoa(mb)+"mb")
	c.assertRoles(t, p)
	c.assertReplicating(t, p)
}

// testRollingRestartAgain rolls the same max_memory again: nothing
// changes and nothing restarts.
func (c *cluster) testRollingRestartAgain(t *testing.T, mb int) {
	before := c.redisServers(t)
	r := c.run(t, "rolling-restart", map[string]any{"max_memory": strconv.Itoa(mb) + "mb"})
	requireOutcome(t, r, store.RunSucceeded)
	for _, name := range []string{taskRender, taskReplicaRestart, taskMasterRender, taskMasterRestart} {
		if got := hostsOf(task(r, name), changed); len(got) > 0 {
			t.Errorf("task %q changed %v", name, got)
		}
	}
	assertEqual(t, "replicas restarted", hostsOf(task(r, taskReplicaRestart), ran), []string(nil))
	assertEqual(t, "master restarted", hostsOf(task(r, taskMasterRestart), ran), []string(nil))
	c.assertNotRestarted(t, before, c.sids()...)
}

// assertNotRestarted checks that the Redis of each host in sids is the
// process that ran before.
func (c *cluster) assertNotRestarted(t *testing.T, before map[string]redisServer, sids ...string) {
	t.Helper()
	after := c.redisServers(t, sids...)
	for _, sid := range sids {
		if after[sid].runID != before[sid].runID {
			t.Errorf("Redis on %s was restarted (run_id %s → %s)", sid, before[sid].runID, after[sid].runID)
		}
	}
}

// assertSequentialWaves checks that no host of wave n+1 started any of the
// named tasks before every host of wave n had finished all of them.
func assertSequentialWaves(t *testing.T, r apitypes.RunDetail, names ...string) {
	t.Helper()
	start, end := map[int]time.Time{}, map[int]time.Time{}
	for _, name := range names {
		for _, h := range task(r, name).Hosts {
			if !ran(h) {
				continue
			}
			if s, ok := start[h.Wave]; !ok || h.StartedAt.Before(s) {
				start[h.Wave] = h.StartedAt
			}
			if h.FinishedAt.After(end[h.Wave]) {
				end[h.Wave] = h.FinishedAt
			}
		}
	}
	ws := slices.Sorted(maps.Keys(start))
	for i := 1; i < len(ws); i++ {
		if start[ws[i]].Before(end[ws[i-1]]) {
			t.Errorf("wave %d started at %v, before wave %d ended at %v", ws[i], start[ws[i]], ws[i-1], end[ws[i-1]])
		}
	}
}

// startOf and endOf are the earliest start and the latest end of a task's
// results.
func startOf(tk apitypes.RunTask) time.Time {
	var first time.Time
	for _, h := range tk.Hosts {
		if first.IsZero() || h.StartedAt.Before(first) {
			first = h.StartedAt
		}
	}
	return first
}

func endOf(tk apitypes.RunTask) time.Time {
	var last time.Time
	for _, h := range tk.Hosts {
		if h.FinishedAt.After(last) {
			last = h.FinishedAt
		}
	}
	return last
}

// primary is the host create elects: the first by SID.
func (c *cluster) primary() string { return c.sids()[0] }

// replicas are the other hosts, sorted.
func (c *cluster) replicas() []string { return c.sids()[1:] }

func uniform(sids []string, v string) map[string]string {
	m := map[string]string{}
	for _, s := range sids {
		m[s] = v
	}
	return m
}

func uptimes(s map[string]redisServer) map[string]int {
	m := map[string]int{}
	for sid, x := range s {
		m[sid] = x.uptime
	}
	return m
}
