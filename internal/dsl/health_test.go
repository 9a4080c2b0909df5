package dsl

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHealthCheckParsed pins what a valid health/<name>.yml becomes and
// the defaults of every: and timeout:.
func TestHealthCheckParsed(t *testing.T) {
	fsys := fstest.MapFS{
		"service.yml": {Data: []byte("name: h\n")},
		"health/ping.yml": {Data: []byte(`module: core.exec.run
params:
  cmd: /usr/bin/redis-cli
  args: [ping]
every: 10s
timeout: 2s
on: [redis]
where: soulprint.self.os.family == "debian"
after_runs: true
`)},
		"health/alive.yml": {Data: []byte("module: core.test.ping\n")},
	}
	svc, problems := LoadFS(fsys)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	p := svc.Health["ping"]
	if p == nil {
		t.Fatalf("health check ping not loaded: %v", svc.Health)
	}
	got := []any{p.Module, p.Params, p.Every, p.Timeout, p.On.Covens, p.Where, p.AfterRuns}
	want := []any{"core.exec.run", map[string]any{"cmd": "/usr/bin/redis-cli", "args": []any{"ping"}}, 10 * time.Second, 2 * time.Second, []string{"redis"}, `soulprint.self.os.family == "debian"`, true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ping (-want +got):\n%s", d)
	}
	a := svc.Health["alive"]
	if a == nil || a.Every != DefaultHealthEvery || a.Timeout != DefaultHealthTimeout || a.On != nil || a.AfterRuns {
		t.Errorf("alive defaults: %+v", a)
	}
}
