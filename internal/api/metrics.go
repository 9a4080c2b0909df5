package api

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/store"
)

// metrics are the API's Prometheus collectors.
type metrics struct {
	latency *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry, st store.Store) (*metrics, error) {
	m := &metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "soulstack",
			Subsystem: "api",
			Name:      "request_duration_seconds",
			Help:      "Latency of Operator API requests by route pattern and HTTP status.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"route", "status"}),
	}
	for _, c := range []prometheus.Collector{m.latency, &soulCollector{st: st}, buildInfo(), &driftCollector{st: st}} {
		if err := reg.Register(c); err != nil {
			return nil, errorf("registering API metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.latency.WithLabelValues(route, strconv.Itoa(status)).Observe(d.Seconds())
}

var (
	soulsDesc = prometheus.NewDesc("soulstack_souls", "Registered souls by status.", []string{"status"}, nil)
	storeDesc = prometheus.NewDesc("soulstack_store_up", "1 when the store answered the last scrape, else 0.", nil, nil)
	incDesc   = prometheus.NewDesc("soulstack_incarnations", "Incarnations by status (alert on error_locked).", []string{"status"}, nil)
	// keeperSoulsDesc is the balance of a fleet of keepers (SPEC §10.4),
	// the same on every keeper of one database.
	keeperSoulsDesc = prometheus.NewDesc("soulstack_keeper_souls", "Connected souls by the keeper holding their stream.", []string{"keeper_id"}, nil)
)

// soulCollector reads souls by status from the store at scrape time, so
// the gauge is right across several keepers sharing one database.
type soulCollector struct{ st store.Store }

func (c *soulCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- soulsDesc
	ch <- storeDesc
	ch <- incDesc
	ch <- keeperSoulsDesc
}

func (c *soulCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Counted in SQL: listing the souls would read and decode every
	// soulprint on each scrape.
	soulCounts, err := c.st.CountSouls(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(storeDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeDesc, prometheus.GaugeValue, 1)
	counts := map[string]int{store.SoulPending: 0, store.SoulConnected: 0, store.SoulDisconnected: 0, store.SoulRejected: 0}
	for status, n := range soulCounts {
		counts[status] += n
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(soulsDesc, prometheus.GaugeValue, float64(n), status)
	}
	if byKeeper, err := c.st.CountSoulsByKeeper(ctx); err == nil {
		for k, n := range byKeeper {
			if k != "" {
				ch <- prometheus.MustNewConstMetric(keeperSoulsDesc, prometheus.GaugeValue, float64(n), k)
			}
		}
	}
	incs, err := c.st.ListIncarnations(ctx)
	if err != nil {
		return
	}
	byStatus := map[string]int{store.IncarnationApplying: 0, store.IncarnationReady: 0, store.IncarnationErrorLocked: 0}
	for _, inc := range incs {
		byStatus[inc.Status]++
	}
	for status, n := range byStatus {
		ch <- prometheus.MustNewConstMetric(incDesc, prometheus.GaugeValue, float64(n), status)
	}
}
