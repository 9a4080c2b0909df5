package e2e

import (
	"testing"
	"time"
)

// TestRedisCluster deploys the example Redis service on a 4-host lab and
// drives it through its scenarios and faults, in order: each step starts
// from the state the previous one left, so the first failing step ends the
// test.
func TestRedisCluster(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	c := newCluster(t)
	svc := c.registerService(t, "redis")
	t.Logf("service %s registered at %s", svc.Name, svc.Commit)

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"create", c.testCreate},
		{"create again changes nothing", c.testCreateAgain},
		{"restart replicas two at a time", c.testRestart},
		{"rolling-restart with a new max_memory", func(t *testing.T) { c.testRollingRestart(t, 96) }},
		{"rolling-restart again restarts nothing", func(t *testing.T) { c.testRollingRestartAgain(t, 96) }},
		{"soul killed before the probe", c.testSoulKilledBeforeProbe},
		{"link cut mid-rollout", c.testLinkCutMidRollout},
		{"keeper restarted mid-run", c.testKeeperRestartMidRun},
		{"first service guide (seed 002) on the same hosts", c.testFirstService},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("step %q failed; the later steps depend on its outcome", s.name)
		}
	}
	t.Logf("the whole end-to-end run took %v", since(start))
}
