package e2e

import (
	"testing"
)

// TestRedisCluster deploys the example Redis service on a 4-host lab and
// drives it through its scenarios and faults, in order: each step starts
// from the state the previous one left.
func TestRedisCluster(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	svc := c.registerService(t.Context(), "redis")
	t.Logf("service %s registered at %s", svc.Name, svc.Commit)
}
