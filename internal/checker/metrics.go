package checker

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the Checker's Prometheus series (SPEC §14): tasks by status,
// schedule ticks run and missed, condition attempts. A nil *Metrics
// records nothing.
type Metrics struct {
	tasks    *prometheus.CounterVec
	running  prometheus.Gauge
	ticks    *prometheus.CounterVec
	attempts *prometheus.CounterVec
}

// NewMetrics creates the Checker's series and registers them with reg (nil:
// unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soulstack_checker_tasks_total", Help: "Checker tasks ended on this keeper, by final status.",
		}, []string{"status"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "soulstack_checker_tasks_running", Help: "Checker tasks running on this keeper.",
		}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soulstack_checker_schedule_ticks_total",
			Help: "Schedule ticks handled by this keeper: run, missed (passed while no leader ran them; never run late), skipped (the previous run still going).",
		}, []string{"result"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soulstack_checker_condition_attempts_total",
			Help: "Condition attempts by outcome: held, not_held, error (a command failed: an attempt that did not hold).",
		}, []string{"result"}),
	}
	for _, s := range []string{StatusSuccess, StatusFailure, StatusCancelled, StatusTimeout} {
		m.tasks.WithLabelValues(s)
	}
	for _, r := range []string{"run", "missed", "skipped"} {
		m.ticks.WithLabelValues(r)
	}
	for _, r := range []string{"held", "not_held", "error"} {
		m.attempts.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.tasks, m.running, m.ticks, m.attempts)
	}
	return m
}

func (m *Metrics) taskStarted() {
	if m != nil {
		m.running.Inc()
	}
}

func (m *Metrics) taskEnded(status string) {
	if m != nil {
		m.running.Dec()
		m.tasks.WithLabelValues(status).Inc()
	}
}

func (m *Metrics) tick(result string, n int) {
	if m != nil && n > 0 {
		m.ticks.WithLabelValues(result).Add(float64(n))
	}
}

func (m *Metrics) attempt(held, failed bool) {
	if m == nil {
		return
	}
	switch {
	case failed:
		m.attempts.WithLabelValues("error").Inc()
	case held:
		m.attempts.WithLabelValues("held").Inc()
	default:
		m.attempts.WithLabelValues("not_held").Inc()
	}
}
