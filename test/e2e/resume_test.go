package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// testResumeRollout is SPEC §8.8 on real hosts: a rolling-restart (one
// replica per wave) fails on the second replica, whose redis-server unit
// the test masked; the test unmasks it, and `run resume` goes on from wave
// 2: the first replica's Redis is not restarted again (same run_id), the
// second and third replicas and the master are, the state commits once,
// and the history links both runs.
func (c *cluster) testResumeRollout(t *testing.T) {
	ctx := t.Context()
	replicas, p := c.replicas(), c.primary()
	wave1, victim, wave3 := replicas[0], replicas[1], replicas[2]
	hist, err := c.api.IncarnationHistory(ctx, incarnation, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := c.redisServers(t)
	h := c.host(t, victim)
	if _, stderr, err := h.Exec(ctx, "systemctl mask redis-server"); err != nil {
		t.Fatalf("masking redis-server on %s: %v %s", victim, err, stderr)
	}
	failed := c.run(t, "rolling-restart", map[string]any{"max_memory": "80mb"})
	requireOutcome(t, failed, store.RunFailed)
	assertEqual(t, "restart failed on", hostsOf(task(failed, taskReplicaRestart), status(domain.StatusFailed)), []string{victim})
	assertEqual(t, "third wave reached", hostsOf(task(failed, taskRender), ran), []string{wave1, victim})
	assertEqual(t, "master touched", hostsOf(task(failed, taskMasterRender), ran), []string(nil))
	mid := c.redisServers(t)
	if mid[wave1].runID == before[wave1].runID {
		t.Fatalf("the first wave's Redis on %s was not restarted by the failed run", wave1)
	}

	if _, stderr, err := h.Exec(ctx, "systemctl unmask redis-server"); err != nil {
		t.Fatalf("unmasking redis-server on %s: %v %s", victim, err, stderr)
	}
	start := time.Now()
	id, err := c.api.ResumeRun(ctx, failed.ID, apitypes.ResumeRequest{Reason: "e2e: redis-server unmasked on " + victim})
	if err != nil {
		t.Fatal(err)
	}
	r := c.waitRun(t, id)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunSucceeded)
	assertEqual(t, "resumed_from", r.ResumedFrom, failed.ID)

	// wave 1 untouched: the same Redis process, its results carried over.
	c.assertNotRestarted(t, mid, wave1)
	if got := task(r, taskRender).Hosts; len(got) == 0 {
		t.Fatalf("no render rows in the resumed run\n%s", describe(r))
	}
	for _, hr := range task(r, taskRender).Hosts {
		if carried := hr.Data["carried_from"] == failed.ID; carried != (hr.SID == wave1) {
			t.Errorf("render on %s: carried=%v", hr.SID, carried)
		}
	}
	after := c.redisServers(t)
	for _, sid := range []string{victim, wave3, p} {
		if after[sid].runID == mid[sid].runID {
			t.Errorf("Redis on %s was not restarted by the resume", sid)
		}
	}
	live, file := c.maxMemories(t)
	assertEqual(t, "live maxmemory", live, uniform(c.sids(), maxMemoryBytes(80)))
	assertEqual(t, "maxmemory in redis.conf", file, uniform(c.sids(), "80mb"))
	c.assertRoles(t, p)
	c.assertReplicating(t, p)

	now, err := c.api.IncarnationHistory(ctx, incarnation, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(now) != len(hist)+1 || now[0].RunID != id || now[0].ResumedFrom != failed.ID || now[0].State["max_memory"] != "80mb" {
		t.Errorf("history: %d snapshots (was %d), newest %+v", len(now), len(hist), now[0])
	}
}

// testDrift is SPEC §8.9 on real hosts: a hand edit of redis.conf on one
// replica shows up in a drift check with its diff (and the restart that
// would follow), nothing else drifts
// (the check runs create with the committed max_memory), nothing is
// changed on the host; a run of create repairs it and the next check is
// clean.
func (c *cluster) testDrift(t *testing.T) {
	ctx := t.Context()
	victim := c.replicas()[0]
	h := c.host(t, victim)
	if _, stderr, err := h.Exec(ctx, "echo '# edited by hand' >> /etc/redis/redis.conf"); err != nil {
		t.Fatalf("editing redis.conf on %s: %v %s", victim, err, stderr)
	}
	report := func() *apitypes.DriftReport {
		t.Helper()
		id, err := c.api.CheckDrift(ctx, incarnation, "")
		if err != nil {
			t.Fatal(err)
		}
		c.waitRun(t, id)
		d, err := c.api.GetDrift(ctx, incarnation)
		if err != nil || d.Report == nil || d.Report.RunID != id {
			t.Fatalf("drift report of %s: %+v %v", id, d.Report, err)
		}
		return d.Report
	}
	rep := report()
	// The config would be rendered again, and (onchanges) Redis restarted.
	want := []string{taskRender, taskCreateRestart}
	if !rep.Drifted || rep.Tasks != len(want) {
		t.Errorf("drift: drifted=%v tasks=%d, want %v\n%+v", rep.Drifted, rep.Tasks, want, rep.Hosts)
	}
	for _, sid := range c.sids() {
		hd := rep.Hosts[sid]
		if sid != victim {
			if hd.Status != store.DriftClean {
				t.Errorf("%s: %+v, want clean", sid, hd)
			}
			continue
		}
		var names []string
		for _, dt := range hd.Tasks {
			names = append(names, dt.Task)
		}
		if hd.Status != store.DriftDrifted || !slices.Equal(names, want) || !strings.Contains(hd.Tasks[0].Diff, "edited by hand") {
			t.Errorf("%s: %+v, want drifted in %v with the diff", sid, hd, want)
		}
	}
	out, _, err := h.Exec(ctx, "tail -1 /etc/redis/redis.conf")
	if err != nil || strings.TrimSpace(out) != "# edited by hand" {
		t.Errorf("the drift check changed redis.conf on %s: %q %v", victim, out, err)
	}
	if inc := c.incarnation(t); inc.Status != store.IncarnationReady {
		t.Errorf("after the drift check: %s", inc.Status)
	}

	r := c.run(t, "create", map[string]any{"max_memory": "80mb"})
	requireOutcome(t, r, store.RunSucceeded)
	if rep := report(); rep.Drifted {
		t.Errorf("still drifted after create: %+v", rep.Hosts)
	}
}

// testResumeAfterKeeperCrash: the keeper is killed (SIGKILL) while a
// rolling-restart is in wave 1 and started again; the run is aborted, and
// once the souls are back it is resumed (not rerun): the rollout goes on
// from the interrupted wave and commits, with the new value live
// everywhere.
func (c *cluster) testResumeAfterKeeperCrash(t *testing.T) {
	ctx := t.Context()
	replicas := c.replicas()
	id := c.startRun(t, "rolling-restart", map[string]any{"max_memory": "176mb"})
	c.watchRun(t, id, "wave 1 to render on "+replicas[0], func(r apitypes.RunDetail) bool {
		return slices.Contains(hostsOf(task(r, taskRender), ran), replicas[0])
	})
	if err := c.keeper.kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.keeper.start(); err != nil {
		t.Fatal(err)
	}
	c.waitKeeperReady(t)
	aborted := c.waitRun(t, id)
	requireOutcome(t, aborted, store.RunAborted)
	c.waitSouls(t, store.SoulConnected, c.sids()...)
	eventually(t, 20*time.Second, "Redis on "+replicas[0]+" to answer again", func() error {
		out, _, err := c.host(t, replicas[0]).Exec(ctx, "redis-cli ping")
		if err != nil || strings.TrimSpace(out) != "PONG" {
			return fmt.Errorf("redis-cli ping: %q, %v", out, err)
		}
		return nil
	})

	start := time.Now()
	resumed, err := c.api.ResumeRun(ctx, id, apitypes.ResumeRequest{Reason: "e2e: the keeper is back"})
	if err != nil {
		t.Fatal(err)
	}
	r := c.waitRun(t, resumed)
	logRun(t, r, since(start))
	requireOutcome(t, r, store.RunSucceeded)
	assertEqual(t, "resumed_from", r.ResumedFrom, id)
	live, file := c.maxMemories(t)
	assertEqual(t, "live maxmemory after the resume", live, uniform(c.sids(), maxMemoryBytes(176)))
	assertEqual(t, "maxmemory in redis.conf after the resume", file, uniform(c.sids(), "176mb"))
	assertEqual[any](t, "committed max_memory", c.incarnation(t).State["max_memory"], "176mb")
	c.assertReplicating(t, c.primary())
}
