package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisCLI runs redis-cli with args in host sid and returns its output
// without the trailing newline.
func (c *cluster) redisCLI(t *testing.T, sid string, args ...string) string {
	t.Helper()
	out, _, err := c.host(t, sid).Exec(t.Context(), "redis-cli "+strings.Join(args, " "))
	if err != nil {
		t.Fatalf("redis-cli %s on %s: %v", strings.Join(args, " "), sid, err)
	}
	return strings.TrimRight(out, "\n")
}

// redisServer is what `redis-cli info server` says about one Redis
// process: run_id changes on every restart, uptime keeps growing until
// then.
type redisServer struct {
	runID  string
	uptime int // seconds
}

// redisServers reads run_id and uptime of the Redis of the hosts sids
// (default: every host).
func (c *cluster) redisServers(t *testing.T, sids ...string) map[string]redisServer {
	t.Helper()
	if len(sids) == 0 {
		sids = c.sids()
	}
	out := map[string]redisServer{}
	for _, sid := range sids {
		info := infoFields(c.redisCLI(t, sid, "info", "server"))
		up, err := strconv.Atoi(info["uptime_in_seconds"])
		if err != nil || info["run_id"] == "" {
			t.Fatalf("redis info server on %s: run_id %q uptime %q", sid, info["run_id"], info["uptime_in_seconds"])
		}
		out[sid] = redisServer{runID: info["run_id"], uptime: up}
	}
	return out
}

// infoFields parses the key:value lines of redis-cli info.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// maxMemories returns the maxmemory (bytes) each host's Redis runs with
// and the one its redis.conf declares.
func (c *cluster) maxMemories(t *testing.T) (live, file map[string]string) {
	t.Helper()
	live, file = map[string]string{}, map[string]string{}
	for _, sid := range c.sids() {
		// config get prints the key, then the value.
		kv := strings.Split(c.redisCLI(t, sid, "config", "get", "maxmemory"), "\n")
		live[sid] = kv[len(kv)-1]
		conf, err := c.host(t, sid).ReadFile("/etc/redis/redis.conf")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(conf), "\n") {
			if v, ok := strings.CutPrefix(line, "maxmemory "); ok {
				file[sid] = v
			}
		}
	}
	return live, file
}

// assertReplicating writes a fresh key on the primary and waits until every
// replica serves it.
func (c *cluster) assertReplicating(t *testing.T, primary string) {
	t.Helper()
	key, val := "e2e:probe", strconv.FormatInt(time.Now().UnixNano(), 10)
	if got := c.redisCLI(t, primary, "set", key, val); got != "OK" {
		t.Fatalf("SET on the primary %s: %q", primary, got)
	}
	start := time.Now()
	for _, sid := range c.sids() {
		if sid == primary {
			continue
		}
		eventually(t, 10*time.Second, "the write on "+primary+" to reach "+sid, func() error {
			if got := c.redisCLI(t, sid, "get", key); got != val {
				return fmt.Errorf("GET %s on %s = %q, want %q", key, sid, got, val)
			}
			return nil
		})
	}
	t.Logf("a write on %s reached every replica in %v", primary, since(start))
}

// assertRoles checks the live role of every host: primary is the master,
// the others are replicas.
func (c *cluster) assertRoles(t *testing.T, primary string) {
	t.Helper()
	for _, sid := range c.sids() {
		want := "slave"
		if sid == primary {
			want = "master"
		}
		role := strings.SplitN(c.redisCLI(t, sid, "role"), "\n", 2)[0]
		if role != want {
			t.Errorf("redis role on %s = %q, want %q", sid, role, want)
		}
	}
}
