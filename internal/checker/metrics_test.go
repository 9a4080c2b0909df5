package checker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/soulstack/soulstack/internal/checker/checkertest"
)

// The Checker's series count what happened: tasks by final status,
// condition attempts (a failed command is "error"), schedule ticks run and
// missed.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	p := newPlatform(t, platformState{Nodes: []platformNode{{"n1", "UP"}}, FailAt: map[string][]int{"cluster nodes list": {1}}})
	e := newEnv(t, Config{Bindings: p.bindings(), Metrics: m})
	e.put("gated", `
steps:
  gate:
    conditions:
      - apicall: "cluster nodes list"
        expect:
          - {filter: "length(@)", op: "==", value: 2}
        attempts: {max: 3, interval: 10}
`)
	if task := e.execWait("gated", nil); task.Status != StatusFailure {
		t.Fatalf("status %s", task.Status)
	}
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{value(t, m.attempts.WithLabelValues("error")), 1, "attempts error"},
		{value(t, m.attempts.WithLabelValues("not_held")), 2, "attempts not_held"},
		{value(t, m.attempts.WithLabelValues("held")), 0, "attempts held"},
		{value(t, m.tasks.WithLabelValues(StatusFailure)), 1, "tasks FAILURE"},
		{value(t, m.running), 0, "tasks running"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// A scheduler that comes up at 13:00:10 logs the 12 ticks missed since
	// the schedule was made (12:00:30) and runs the 13:05 one.
	clock := checkertest.NewFakeClock(t0, false)
	e2 := newEnv(t, Config{Clock: clock, Metrics: m})
	e2.put("hello", helloProc)
	if _, err := e2.c.AddSchedule(context.Background(), "hello", map[string]any{"who": "cron"}, "*/5 * * * *", e2.owner()); err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(e2.c, SchedulerConfig{Logger: slog.New(slog.DiscardHandler)})
	s.check(context.Background(), time.Date(2025, 3, 1, 13, 0, 10, 0, time.UTC))
	s.check(context.Background(), time.Date(2025, 3, 1, 13, 5, 0, 0, time.UTC))
	if got := value(t, m.ticks.WithLabelValues("missed")); got != 12 {
		t.Errorf("ticks missed = %v, want 12", got)
	}
	if got := value(t, m.ticks.WithLabelValues("run")); got != 1 {
		t.Errorf("ticks run = %v, want 1", got)
	}
}

// value reads a counter's or gauge's current value.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
