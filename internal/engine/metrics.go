package engine

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/store"
)

// Metrics are the run engine's Prometheus series (SPEC §14): runs and host
// task results by outcome and duration, runs in progress, and the work
// dispatched and not yet answered.
type Metrics struct {
	runs        *prometheus.CounterVec
	runDuration *prometheus.HistogramVec
	active      prometheus.Gauge
	results     *prometheus.CounterVec
	taskSeconds *prometheus.HistogramVec
	inflight    prometheus.Gauge
}

// NewMetrics creates the engine's series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soulstack_runs_total", Help: "Finished runs by final status.",
		}, []string{"status", "check"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "soulstack_run_duration_seconds", Help: "Wall time of finished runs.",
			// 50 ms doubling to 55 min, then 1 h (SPEC §14: buckets to 1 h).
			Buckets: append(prometheus.ExponentialBuckets(0.05, 2, 17), 3600),
		}, []string{"status"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "soulstack_runs_active", Help: "Runs executing on this keeper.",
		}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soulstack_task_results_total", Help: "Per-host task results by status.",
		}, []string{"status"}),
		taskSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "soulstack_task_duration_seconds", Help: "Per-host task duration as the host reported it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"status"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "soulstack_dispatch_inflight", Help: "Work dispatched to hosts and not answered yet (the dispatch queue).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.runDuration, m.active, m.results, m.taskSeconds, m.inflight)
	}
	return m
}

func (m *Metrics) runStarted() {
	if m != nil {
		m.active.Inc()
	}
}

func (m *Metrics) runFinished(status string, check bool, d time.Duration) {
	if m == nil {
		return
	}
	m.active.Dec()
	c := "false"
	if check {
		c = "true"
	}
	m.runs.WithLabelValues(status, c).Inc()
	m.runDuration.WithLabelValues(status).Observe(d.Seconds())
}

func (m *Metrics) hostResults(rows []store.HostResult) {
	if m == nil {
		return
	}
	for _, r := range rows {
		m.results.WithLabelValues(r.Status).Inc()
		m.taskSeconds.WithLabelValues(r.Status).Observe(float64(r.DurationMS) / 1000)
	}
}

func (m *Metrics) dispatchStarted() {
	if m != nil {
		m.inflight.Inc()
	}
}

func (m *Metrics) dispatchDone() {
	if m != nil {
		m.inflight.Dec()
	}
}
