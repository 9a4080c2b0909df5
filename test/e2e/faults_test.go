package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
)

// rolloutTasks are the tasks of rolling-restart after its probe.
var rolloutTasks = []string{taskRender, taskReplicaRestart, taskReplicaHealth, taskMasterRender, taskMasterRestart}

// testSoulKilledBeforeProbe kills one replica's soul, then starts a
// rolling-restart: the probe's completeness check fails the run before
// anything is touched, the incarnation is error_locked and its state is
// unchanged. Then the incarnation is unlocked and the soul restarted.
func (c *cluster) testSoulKilledBeforeProbe(t *testing.T) {
	c.soulKilledBeforeProbe(t, c.killSoul)
}

// testSoulSystemctlKilledBeforeProbe is testSoulKilledBeforeProbe with the
// soul killed by `systemctl kill --signal=SIGKILL soulstack-soul` (systemd hosts).
func (c *cluster) testSoulSystemctlKilledBeforeProbe(t *testing.T) {
	c.soulKilledBeforeProbe(t, func(t *testing.T, sid string) {
		t.Helper()
		pid := c.mainPID(t, sid, soulUnit)
		if _, _, err := c.host(t, sid).Exec(t.Context(), "systemctl kill --signal=SIGKILL "+soulUnit); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the soul of "+sid+" to die", func() error {
			if _, _, err := c.host(t, sid).Exec(t.Context(), fmt.Sprintf("kill -0 %d", pid)); err == nil {
				return fmt.Errorf("pid %d still running", pid)
			}
			return nil
		})
	})
}

func (c *cluster) soulKilledBeforeProbe(t *testing.T, kill func(t *testing.T, sid string)) {
	victim := c.replicas()[2]
	before, inc := c.redisServers(t), c.incarnation(t)
	restarts := ""
	if c.flavour == lab.FlavourSystemd {
		restarts = c.unitProp(t, victim, soulUnit, "NRestarts")
	}
	kill(t, victim)
	c.waitSouls(t, store.SoulDisconnected, victim)

	r := c.run(t, "rolling-restart", map[string]any{"max_memory": "128mb"})
	requireOutcome(t, r, store.RunFailed)
	probe := task(r, taskRollProbe)
	answered := slices.DeleteFunc(c.sids(), func(s string) bool { return s == victim })
	assertEqual(t, "probe unreachable", hostsOf(probe, status(domain.StatusUnreachable)), []string{victim})
	assertEqual(t, "probe failed by its completeness check", hostsOf(probe, status(domain.StatusFailed)), answered)
	for _, name := range rolloutTasks {
		assertEqual(t, "hosts that ran "+name, hostsOf(task(r, name), ran), []string(nil))
	}
	c.assertLockedUnchanged(t, inc)
	c.assertNotRestarted(t, before, c.sids()...)
	_, file := c.maxMemories(t)
	assertEqual(t, "maxmemory in redis.conf", file, uniform(c.sids(), inc.State["max_memory"].(string)))

	c.unlock(t, "e2e: the killed soul is restarted")
	start := time.Now()
	if c.flavour == lab.FlavourSystemd {
		// Restart=always: systemd starts the soul again by itself.
		c.waitSouls(t, store.SoulConnected, victim)
		if n := c.unitProp(t, victim, soulUnit, "NRestarts"); n == restarts {
			t.Errorf("%s on %s: NRestarts = %s before and after its main process was killed", soulUnit, victim, n)
		}
		t.Logf("systemd restarted the soul of %s and it reconnected %v after the unlock", victim, since(start))
		return
	}
	c.startSoul(t, victim, false)
	c.waitSouls(t, store.SoulConnected, victim)
	t.Logf("the soul of %s restarted (no join token: its key and pinned keeper are in its data dir) and connected in %v", victim, since(start))
}

// testHostDownMidWave shuts the host of wave 2 down cleanly (as the lab's
// operator would: systemd stops every unit, the soul included) while wave
// 1 of a rollout runs: wave 2 is unreachable, nothing later starts, the
// incarnation is error_locked with its state unchanged. Booted again, the
// host comes back by itself: a new boot id, Redis (enabled) running with
// its old config, the soul (enabled) reconnected.
func (c *cluster) testHostDownMidWave(t *testing.T) {
	replicas := c.replicas()
	wave1, victim, wave3 := replicas[0], replicas[1], replicas[2]
	before, inc := c.redisServers(t), c.incarnation(t)
	prev := inc.State["max_memory"].(string)
	h := c.host(t, victim)
	bootID, err := h.BootID()
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	id := c.startRun(t, "rolling-restart", map[string]any{"max_memory": "112mb"})
	c.watchRun(t, id, "wave 1 to render on "+wave1, func(r apitypes.RunDetail) bool {
		return slices.Contains(hostsOf(task(r, taskRender), ran), wave1)
	})
	if err := h.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	booted := false
	defer func() {
		if !booted {
			_ = h.Boot(context.Background())
		}
	}()
	t.Logf("shut %s (wave 2) down while wave 1 ran on %s", victim, wave1)
	r := c.waitRun(t, id)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunFailed)
	var unreachable []string
	for _, name := range rolloutTasks {
		unreachable = append(unreachable, hostsOf(task(r, name), status(domain.StatusUnreachable))...)
	}
	assertEqual(t, "unreachable in the rollout", unreachable, []string{victim})
	c.assertLockedUnchanged(t, inc)
	c.assertNotRestarted(t, before, wave3, c.primary())

	start = time.Now()
	booted = true
	if err := h.Boot(t.Context()); err != nil {
		t.Fatal(err)
	}
	if now, _ := h.BootID(); now == bootID {
		t.Errorf("%s has the boot id it had before the shutdown", victim)
	}
	c.waitSouls(t, store.SoulConnected, victim)
	t.Logf("%s booted; its soul (enabled) reconnected by itself in %v", victim, since(start))
	eventually(t, 20*time.Second, "Redis on "+victim+" to answer again", func() error {
		out, _, err := h.Exec(t.Context(), "redis-cli ping")
		if err != nil || strings.TrimSpace(out) != "PONG" {
			return fmt.Errorf("redis-cli ping: %q, %v", out, err)
		}
		return nil
	})
	_, file := c.maxMemories(t)
	assertEqual(t, "maxmemory in redis.conf", file, map[string]string{
		c.primary(): prev, wave1: "112mb", victim: prev, wave3: prev})
	c.unlock(t, "e2e: the host is back")
}

// testLinkCutMidRollout cuts the link of the host of wave 2 while wave 1
// of a serial: 1 rollout runs: wave 1 completes, wave 2 fails
// unreachable, wave 3 and the master never start, the incarnation is
// error_locked with its state unchanged. Then the link is restored (the
// soul reconnects by itself) and the incarnation unlocked.
func (c *cluster) testLinkCutMidRollout(t *testing.T) {
	replicas := c.replicas()
	wave1, victim, wave3 := replicas[0], replicas[1], replicas[2]
	before, inc := c.redisServers(t), c.incarnation(t)
	prev := inc.State["max_memory"].(string)

	start := time.Now()
	id := c.startRun(t, "rolling-restart", map[string]any{"max_memory": "128mb"})
	c.watchRun(t, id, "wave 1 to render on "+wave1, func(r apitypes.RunDetail) bool {
		return slices.Contains(hostsOf(task(r, taskRender), ran), wave1)
	})
	if err := c.host(t, victim).CutLink(t.Context()); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := c.host(t, victim).RestoreLink(t.Context()); err != nil {
				t.Error(err)
			}
		}
	}
	defer restore()
	t.Logf("cut the link of %s (wave 2) while wave 1 ran on %s", victim, wave1)
	r := c.waitRun(t, id)
	logRun(t, r, since(start))
	t.Logf("%s", describe(r))
	requireOutcome(t, r, store.RunFailed)

	for _, name := range []string{taskRender, taskReplicaRestart, taskReplicaHealth} {
		assertEqual(t, "wave 1 "+name, hostsOf(task(r, name), ran), []string{wave1})
	}
	var unreachable []string
	for _, name := range rolloutTasks {
		unreachable = append(unreachable, hostsOf(task(r, name), status(domain.StatusUnreachable))...)
		if got := hostsOf(task(r, name), func(h apitypes.RunHost) bool { return h.SID == wave3 || h.SID == c.primary() }); len(got) > 0 {
			t.Errorf("task %q has results on %v: a wave after the failed one started", name, got)
		}
	}
	assertEqual(t, "unreachable in the rollout", unreachable, []string{victim})
	c.assertLockedUnchanged(t, inc)
	c.assertNotRestarted(t, before, wave3, c.primary())
	_, file := c.maxMemories(t)
	assertEqual(t, "maxmemory in redis.conf", file, map[string]string{
		c.primary(): prev, wave1: "128mb", victim: prev, wave3: prev})

	restore()
	start = time.Now()
	c.waitSouls(t, store.SoulConnected, victim)
	t.Logf("link of %s restored; its soul reconnected by itself in %v", victim, since(start))
	c.unlock(t, "e2e: link restored")
}

// testKeeperRestartMidRun kills the Keeper (SIGKILL) while wave 1 of a
// rolling-restart runs and starts it again on the same data directory and
// port: the run is aborted, the incarnation error_locked, nothing is
// committed, and every soul reconnects by itself. A rerun after the unlock
// converges the whole cluster.
func (c *cluster) testKeeperRestartMidRun(t *testing.T) {
	replicas := c.replicas()
	before, inc := c.redisServers(t), c.incarnation(t)
	history, err := c.api.IncarnationHistory(t.Context(), incarnation, 0)
	if err != nil {
		t.Fatal(err)
	}

	runStart := time.Now()
	id := c.startRun(t, "rolling-restart", map[string]any{"max_memory": "160mb"})
	c.watchRun(t, id, "wave 1 to render on "+replicas[0], func(r apitypes.RunDetail) bool {
		return slices.Contains(hostsOf(task(r, taskRender), ran), replicas[0])
	})
	pid := c.keeper.pid()
	if err := c.keeper.kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the keeper (pid %d) with SIGKILL while wave 1 restarted %s", pid, replicas[0])
	start := time.Now()
	if err := c.keeper.start(); err != nil {
		t.Fatal(err)
	}
	c.waitKeeperReady(t)
	t.Logf("keeper restarted (pid %d) on %s in %v", c.keeper.pid(), c.keeper.addr, since(start))

	r := c.waitRun(t, id)
	logRun(t, r, since(runStart))
	requireOutcome(t, r, store.RunAborted)
	c.assertLockedUnchanged(t, inc)
	t.Logf("%s", describe(r))
	if h, err := c.api.IncarnationHistory(t.Context(), incarnation, 0); err != nil || len(h) != len(history) {
		t.Errorf("history has %d snapshots after the aborted run (err %v), want %d: something was committed", len(h), err, len(history))
	}
	c.waitSouls(t, store.SoulConnected, c.sids()...)
	t.Logf("all %d souls reconnected by themselves %v after the keeper restart", hostCount, since(start))
	c.assertNotRestarted(t, before, replicas[2], c.primary())
	// The soul of wave 1 finishes the restart it was running: Redis comes
	// back there by itself, with the config rendered before the crash.
	eventually(t, 20*time.Second, "Redis on "+replicas[0]+" to answer again", func() error {
		out, _, err := c.host(t, replicas[0]).Exec(t.Context(), "redis-cli ping")
		if err != nil || strings.TrimSpace(out) != "PONG" {
			return fmt.Errorf("redis-cli ping: %q, %v", out, err)
		}
		return nil
	})
	// Its result reaches the new keeper late (or came in before the kill):
	// it is recorded in the aborted run (SPEC §8.5) and changes nothing —
	// the run stays aborted, the state uncommitted.
	eventually(t, 20*time.Second, "the restart of "+replicas[0]+" in the aborted run's record", func() error {
		var err error
		if r, err = c.api.GetRun(t.Context(), id); err != nil {
			return err
		}
		if got := hostsOf(task(r, taskReplicaRestart), changed); !slices.Equal(got, replicas[:1]) {
			return fmt.Errorf("hosts the restart changed: %v", got)
		}
		return nil
	})
	requireOutcome(t, r, store.RunAborted)
	c.assertLockedUnchanged(t, inc)
	restart, _ := hostResult(task(r, taskReplicaRestart), replicas[0])
	late := restart.Data["late"] == true
	t.Logf("the restart of %s is in the aborted run (late: %v): %s", replicas[0], late, restart.Msg)

	// The rerun renders what the aborted run had not; a restart whose
	// result came only late was owed to its host by the crash (SPEC §8.3:
	// the keeper recorded a pending trigger on restart), so it restarts
	// again even though its config is unchanged now — a handler is never
	// lost to a crash.
	c.unlock(t, "e2e: keeper restarted")
	r = c.run(t, "rolling-restart", map[string]any{"max_memory": "160mb"})
	requireOutcome(t, r, store.RunSucceeded)
	rendered := hostsOf(task(r, taskRender), changed)
	assertEqual(t, "replicas whose config the rerun rendered", rendered, replicas[1:])
	wantRestarted := rendered
	if late {
		wantRestarted = replicas
	}
	assertEqual(t, "replicas the rerun restarted", hostsOf(task(r, taskReplicaRestart), changed), wantRestarted)
	live, file := c.maxMemories(t)
	assertEqual(t, "live maxmemory after the rerun", live, uniform(c.sids(), maxMemoryBytes(160)))
	assertEqual(t, "maxmemory in redis.conf after the rerun", file, uniform(c.sids(), "160mb"))
	assertEqual[any](t, "committed max_memory", c.incarnation(t).State["max_memory"], "160mb")
	c.assertReplicating(t, c.primary())
}

// hostResult is sid's result of t.
func hostResult(t apitypes.RunTask, sid string) (apitypes.RunHost, bool) {
	for _, h := range t.Hosts {
		if h.SID == sid {
			return h, true
		}
	}
	return apitypes.RunHost{}, false
}

// assertLockedUnchanged checks that the incarnation is error_locked with
// the state it had before (inc).
func (c *cluster) assertLockedUnchanged(t *testing.T, inc apitypes.Incarnation) {
	t.Helper()
	now := c.incarnation(t)
	assertEqual(t, "status", now.Status, store.IncarnationErrorLocked)
	assertEqual(t, "state", now.State, inc.State)
}
