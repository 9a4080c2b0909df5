package api

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/store"
)

var (
	driftedDesc = prometheus.NewDesc("soulstack_incarnation_drifted",
		"1 when the incarnation's last drift check found a host that would change, else 0 (SPEC §8.9).", []string{"incarnation"}, nil)
	driftTasksDesc = prometheus.NewDesc("soulstack_incarnation_drift_tasks",
		"Tasks the incarnation's last drift check found would change, summed over its hosts.", []string{"incarnation"}, nil)
)

// driftCollector exports the last drift report of each checked
// incarnation, read from the store at scrape time (right across keepers).
type driftCollector struct{ st store.Store }

func (c *driftCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- driftedDesc
	ch <- driftTasksDesc
}

func (c *driftCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := c.st.ListDrift(ctx)
	if err != nil {
		return // soulstack_store_up says so
	}
	for _, d := range ds {
		if d.Report == nil {
			continue
		}
		drifted := 0.0
		if d.Report.Drifted {
			drifted = 1
		}
		ch <- prometheus.MustNewConstMetric(driftedDesc, prometheus.GaugeValue, drifted, d.Incarnation)
		ch <- prometheus.MustNewConstMetric(driftTasksDesc, prometheus.GaugeValue, float64(d.Report.Tasks), d.Incarnation)
	}
}
