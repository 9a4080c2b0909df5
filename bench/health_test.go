package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/soulstack/soulstack/internal/apitypes"
)

// healthService has five read-only health checks every 10 s (SPEC §14.1;
// issue 22's benchmark): in-process modules, so the swarm's own work stays
// small and the keeper's share is what is measured.
var healthService = map[string]string{
	"service.yml":              "name: health5\ndescription: five health checks every 10 s (issue 22 benchmark)\n",
	"scenario/create/main.yml": "tasks:\n  - name: ping\n    module: core.test.ping\n",
	"health/ping-1.yml":        "module: core.test.ping\nevery: 10s\n",
	"health/ping-2.yml":        "module: core.test.ping\nevery: 10s\n",
	"health/ping-3.yml":        "module: core.test.ping\nevery: 10s\n",
	"health/root-stat.yml":     "module: core.file.stat\nparams:\n  path: /etc\n  checksum: false\nevery: 10s\n",
	"health/echo.yml":          "module: core.test.echo\nparams:\n  message: fine\nevery: 10s\n",
}

// BenchmarkHealthChecks is issue 22's benchmark: an in-process keeper on
// SQLite with its defaults, one `soul swarm` of N souls
// ($SOULSTACK_BENCH_SOULS, default 1000) over TLS, one incarnation of
// health5 over all of them — N × 5 checks every 10 s, souls sending
// changes at once and a summary every minute (the defaults), vital signs
// every minute. Once every check reported OK, it measures over a window
// ($SOULSTACK_BENCH_HEALTH_WINDOW, default 2m) the keeper process's CPU
// (this process: the souls live in the swarm process) and what the health
// batcher wrote: rows and write transactions per second. Run with
// -benchtime 1x.
func BenchmarkHealthChecks(b *testing.B) {
	n := envInt(b, "SOULSTACK_BENCH_SOULS", 1000)
	window := 2 * time.Minute
	if v := os.Getenv("SOULSTACK_BENCH_HEALTH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		window = d
	}
	ctx := context.Background()
	e := startKeeper(b, nil)
	e.registerService("health5", healthService)
	soulBinary(b)
	e.startSwarm(n, "hc", "hc")
	create, err := e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "hc", Service: "health5", Covens: []string{"hc"}})
	if err != nil {
		b.Fatalf("create: %v", err)
	}
	b.Logf("%d souls connected; create: %s", n, create)
	start := time.Now()
	for {
		h, err := e.c.IncarnationHealth(ctx, "hc")
		if err != nil {
			b.Fatal(err)
		}
		if h.Counts["OK"] == 5*n {
			break
		}
		if time.Since(start) > 3*time.Minute {
			b.Fatalf("after 3m: %v of %d checks", h.Counts, 5*n)
		}
		time.Sleep(time.Second)
	}
	b.Logf("all %d checks OK %s after the create run", 5*n, time.Since(start).Round(time.Second))

	b.ResetTimer()
	for b.Loop() {
		m0, p0 := e.healthCounters(), mustProc(b)
		t0 := time.Now()
		time.Sleep(window)
		m1, p1, secs := e.healthCounters(), mustProc(b), time.Since(t0).Seconds()
		cpu := float64(p1.CPUTick-p0.CPUTick) / clockTick / secs * 100
		rows := (m1["rows"] - m0["rows"]) / secs
		b.ReportMetric(cpu, "keeper-cpu-%")
		b.ReportMetric(rows, "rows/s")
		b.ReportMetric((m1["batches"]-m0["batches"])/secs, "write-tx/s")
		b.ReportMetric((m1["reports"]-m0["reports"])/secs, "reports/s")
		b.Logf("window %s: keeper CPU %.2f%% of one core, %.0f rows/s in %.2f write transactions/s, %.0f reports/s, %s",
			time.Duration(secs*float64(time.Second)).Round(time.Second), cpu, rows, (m1["batches"]-m0["batches"])/secs,
			(m1["reports"]-m0["reports"])/secs, fmtCounters(m0, m1))
	}
	b.StopTimer()
	h, err := e.c.IncarnationHealth(ctx, "hc")
	if err != nil {
		b.Fatal(err)
	}
	if h.Counts["OK"] != 5*n {
		b.Errorf("after the window: %v", h.Counts)
	}
}

func mustProc(b *testing.B) procStat {
	b.Helper()
	st, err := readProc(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// healthCounters reads the keeper's health metrics.
func (e *env) healthCounters() map[string]float64 {
	e.tb.Helper()
	mfs, err := e.k.Registry().Gather()
	if err != nil {
		e.tb.Fatal(err)
	}
	out := map[string]float64{}
	sum := func(mf *dto.MetricFamily) float64 {
		t := 0.0
		for _, m := range mf.GetMetric() {
			t += m.GetCounter().GetValue()
		}
		return t
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "soulstack_health_rows_written_total":
			out["rows"] = sum(mf)
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					out["rows_"+l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		case "soulstack_health_write_batches_total":
			out["batches"] = sum(mf)
		case "soulstack_health_reports_total":
			out["reports"] = sum(mf)
		case "soulstack_health_transitions_total":
			out["transitions"] = sum(mf)
		}
	}
	return out
}

func fmtCounters(a, b map[string]float64) string {
	return fmt.Sprintf("rows: states %.0f, transitions %.0f, vitals %.0f; transitions seen %.0f",
		b["rows_states"]-a["rows_states"], b["rows_transitions"]-a["rows_transitions"], b["rows_vitals"]-a["rows_vitals"], b["transitions"]-a["transitions"])
}
