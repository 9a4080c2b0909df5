package engine

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRunDurationBucketsReachAnHour (SPEC §14): a 50-minute run lands in a
// bucket below +Inf, and the top bucket is 1 h.
func TestRunDurationBucketsReachAnHour(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.runDuration.WithLabelValues("ok").Observe(3000)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "soulstack_run_duration_seconds" {
			continue
		}
		bs := mf.GetMetric()[0].GetHistogram().GetBucket()
		top := bs[len(bs)-1]
		if top.GetUpperBound() != 3600 || top.GetCumulativeCount() != 1 || bs[len(bs)-3].GetCumulativeCount() != 0 {
			t.Errorf("top bucket le=%v count %d; want le=3600 holding the 50-minute run", top.GetUpperBound(), top.GetCumulativeCount())
		}
		return
	}
	t.Fatal("no soulstack_run_duration_seconds")
}
