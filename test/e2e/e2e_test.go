package e2e

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
)

// step is one stage of a cluster test.
type step struct {
	name string
	run  func(t *testing.T)
}

// runSteps runs steps in order: each starts from the state the previous one
// left, so the first failing step ends the test. between, when set, runs
// before every step after the first.
func runSteps(t *testing.T, steps []step, between func(t *testing.T)) {
	t.Helper()
	for i, s := range steps {
		if i > 0 && between != nil {
			between(t)
		}
		if !t.Run(s.name, s.run) {
			t.Fatalf("step %q failed; the later steps depend on its outcome", s.name)
		}
	}
}

// TestRedisCluster deploys the example Redis service on a 4-host lab of
// systemd hosts, where Redis is its package's own unit and every soul is
// the soulstack-soul unit installed from the .deb, and drives it through
// its scenarios and faults.
func TestRedisCluster(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	c := newCluster(t, lab.FlavourSystemd)
	svc := c.registerService(t, "redis")
	t.Logf("service %s registered at %s", svc.Name, svc.Commit)
	runSteps(t, []step{
		{"create", c.testCreate},
		{"create again changes nothing", c.testCreateAgain},
		{"health checks: redis stopped goes CRITICAL, the Checker restarts it", c.testHealth},
		{"restart replicas two at a time", c.testRestart},
		{"rolling-restart with a new max_memory", func(t *testing.T) { c.testRollingRestart(t, 96) }},
		{"rolling-restart again restarts nothing", func(t *testing.T) { c.testRollingRestartAgain(t, 96) }},
		{"rollout failed on wave 2, resumed after the fix", c.testResumeRollout},
		{"hand edit shows as drift until create", c.testDrift},
		{"soul killed (kill -9 of its main PID) before the probe", c.testSoulKilledBeforeProbe},
		{"soul killed (systemctl kill) before the probe", c.testSoulSystemctlKilledBeforeProbe},
		{"host shut down by the lab mid-wave", c.testHostDownMidWave},
		{"link cut mid-rollout", c.testLinkCutMidRollout},
		{"keeper restarted mid-run", c.testKeeperRestartMidRun},
		{"keeper killed mid-rollout, the aborted run resumed", c.testResumeAfterKeeperCrash},
		{"first service guide (seed 002), a soul restarted mid apt-get install", c.testFirstServiceSoulRestarted},
		{"hosts rebooted from a task (core.system.rebooted)", c.testRebootedFromTask},
	}, c.resetStartLimits)
	t.Logf("the whole end-to-end run took %v", since(start))
}

// TestRedisClusterSysV runs the smaller set on sysv hosts (tini as PID 1,
// Redis by its init script, souls started by the test): create, the
// restarts, and the first-service guide.
func TestRedisClusterSysV(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	c := newCluster(t, lab.FlavourSysV)
	c.registerService(t, "redis")
	runSteps(t, []step{
		{"create", c.testCreate},
		{"restart replicas two at a time", c.testRestart},
		{"rolling-restart with a new max_memory", func(t *testing.T) { c.testRollingRestart(t, 96) }},
		{"first service guide (seed 002) on the same hosts", c.testFirstService},
	}, nil)
	t.Logf("the sysv end-to-end run took %v", since(start))
}
