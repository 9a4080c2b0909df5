package healthkeeper

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/store"
)

// metrics are the Manager's Prometheus series: never one per host.
type metrics struct {
	reports     prometheus.Counter
	transitions *prometheus.CounterVec
	flaps       prometheus.Counter
	writes      *prometheus.CounterVec
	batches     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, st store.Store) *metrics {
	m := &metrics{
		reports: prometheus.NewCounter(prometheus.CounterOpts{Name: "soulstack_health_reports_total",
			Help: "Health reports received from souls (changes and summaries)."}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soulstack_health_transitions_total",
			Help: "Health check status changes, by the new status."}, []string{"status"}),
		flaps: prometheus.NewCounter(prometheus.CounterOpts{Name: "soulstack_health_flaps_total",
			Help: "Transitions counted but not stored one by one (a check flapping faster than the history's rate limit)."}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soulstack_health_rows_written_total",
			Help: "Rows written by the health batcher, by kind (states, transitions, vitals)."}, []string{"kind"}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: "soulstack_health_write_batches_total",
			Help: "Write transactions of the health batcher."}),
	}
	if reg != nil {
		reg.MustRegister(m.reports, m.transitions, m.flaps, m.writes, m.batches, &checksCollector{store: st})
	}
	return m
}

// checksCollector exports soulstack_health_checks{incarnation,check,status}
// from the store at scrape time, so every keeper sharing a database shows
// the same counts. Stale hosts count as stale.
type checksCollector struct {
	store store.Store
}

var checksDesc = prometheus.NewDesc("soulstack_health_checks",
	"Hosts per health check and status (stale: the host stopped reporting).",
	[]string{"incarnation", "check", "status"}, nil)

func (c *checksCollector) Describe(ch chan<- *prometheus.Desc) { ch <- checksDesc }

func (c *checksCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	states, err := c.store.ListHealthStates(ctx, "")
	if err != nil {
		// The store is down: soulstack_store_up says so, and the rest of
		// /metrics is still served (an invalid metric would make the whole
		// scrape a 500 while the store is down; SPEC §10.4).
		return
	}
	type key struct{ inc, check, status string }
	counts := map[key]int{}
	now := time.Now()
	for _, st := range states {
		counts[key{st.Incarnation, st.Check, EffectiveStatus(st, now, DefaultStaleAfter)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(checksDesc, prometheus.GaugeValue, float64(n), k.inc, k.check, k.status)
	}
}

// EffectiveStatus is the status shown for a stored state: stale when the
// host has not reported for staleAfter.
func EffectiveStatus(st store.HealthState, now time.Time, staleAfter time.Duration) string {
	if now.Sub(st.ReportedAt) > staleAfter {
		return health.Stale
	}
	return st.Status
}
