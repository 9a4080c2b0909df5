package engine_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/scenariotest"
)

func TestMetricsCountRunsAndResults(t *testing.T) {
	svc := loadService(t, map[string]string{"scenario/create/main.yml": `
tasks:
  - {name: ping, module: core.test.ping}
  - {name: boom, module: core.test.fail, where: 'soulprint.self.sid == "b"'}
`})
	reg := prometheus.NewRegistry()
	m := engine.NewMetrics(reg)
	w := newWorld(t, svc, "create", `
hosts: [{sid: a, covens: [app]}, {sid: b, covens: [app]}]
incarnation: {name: app, covens: [app]}
stubs:
  - {module: core.test.fail, result: {failed: true, msg: boom}}
expect: {outcome: failed}
`, scenariotest.Options{Metrics: m})
	run := w.run()
	if run.Status != "failed" {
		t.Fatalf("run %s, want failed", run.Status)
	}
	want := map[string]float64{"ok": 2, "failed": 1}
	for status, n := range want {
		if got := counter(t, reg, "soulstack_task_results_total", status); got != n {
			t.Errorf("task results %s = %v, want %v", status, got, n)
		}
	}
	// The run's record is written just before the engine counts it.
	deadline := time.Now().Add(5 * time.Second)
	for counter(t, reg, "soulstack_runs_total", "failed") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := counter(t, reg, "soulstack_runs_total", "failed"); got != 1 {
		t.Errorf("failed runs = %v, want 1", got)
	}
}

// counter reads the counter name with label status (0 if absent).
func counter(t *testing.T, reg *prometheus.Registry, name, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" && l.GetValue() == status {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
