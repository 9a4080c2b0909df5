package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// countingActions counts what the rules would start; the benchmark
// measures the rules engine and its store writes, not the run engine.
type countingActions struct{ runs atomic.Int64 }

func (a *countingActions) StartRun(context.Context, string, string, map[string]any, bool, string) (string, error) {
	return fmt.Sprintf("run-%d", a.runs.Add(1)), nil
}
func (a *countingActions) ExecuteProcedure(context.Context, string, map[string]any, string) ([]string, error) {
	return nil, nil
}
func (a *countingActions) WaitTasks(context.Context, []string) {}
func (a *countingActions) Notify(context.Context, []string, rules.Notification, int64) error {
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRulesFlapStorm is issue 33's storm: a check flapping on 1,000
// hosts at once (each host: CRITICAL, CRITICAL again, OK — five times),
// 15,000 health.changed events published at once into the rules engine on
// SQLite with the self-healing rule (max_per_hour 6, max_concurrent 2,
// cooldown 10m). It reports events decided per second, firings,
// suppressions, and the CPU the engine used, and fails if an event is
// lost (every event is decided; every match is recorded).
func BenchmarkRulesFlapStorm(b *testing.B) {
	rule, err := dsl.ParseRule("restart-daemon", []byte(`on: health.changed
if: event.check == "daemon" && event.to == "CRITICAL" && event.streak == 2
do:
  run: {scenario: restart, incarnation: "${ event.incarnation }", input: {host: "${ event.sid }"}}
cooldown: 10m
max_per_hour: 6
max_concurrent: 2
`))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "k.db"))
		if err != nil {
			b.Fatal(err)
		}
		acts := &countingActions{}
		e := rules.New(rules.Config{Store: st, Actions: acts,
			Services: func(context.Context, string) (string, map[string]*dsl.Rule, string, error) {
				return "self-healing", map[string]*dsl.Rule{"restart-daemon": rule}, "owner", nil
			}})
		const hosts, flaps = 1000, 5
		var evs []rules.Event
		for f := 0; f < flaps; f++ {
			for _, step := range []struct {
				from, to string
				streak   int
			}{{"OK", "CRITICAL", 1}, {"OK", "CRITICAL", 2}, {"CRITICAL", "OK", 1}} {
				for h := 0; h < hosts; h++ {
					evs = append(evs, rules.Event{Kind: dsl.EventHealthChanged, Incarnation: "inc", Fields: map[string]any{
						"service": "self-healing", "check": "daemon", "sid": fmt.Sprintf("host-%04d", h), "from": step.from, "to": step.to,
						"streak": int64(step.streak), "duration_s": int64(2), "message": "",
					}})
				}
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { e.Run(runCtx); close(done) }()
		cpu0, t0 := cpuTime(), time.Now()
		for _, ev := range evs {
			e.Publish(ev)
		}
		for e.Stats().Events < int64(len(evs)) {
			time.Sleep(5 * time.Millisecond)
		}
		wall, cpu := time.Since(t0), cpuTime()-cpu0
		cancel()
		<-done
		s := e.Stats()
		fs, err := st.ListFirings(ctx, store.FiringFilter{Limit: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		if s.Events != int64(len(evs)) || int64(len(fs)) != s.Fired+s.Suppressed+s.Resolved+s.DryRun+s.Failed {
			b.Fatalf("lost: %d events published, %d decided; %d decisions recorded, stats %+v", len(evs), s.Events, len(fs), s)
		}
		b.ReportMetric(float64(len(evs))/wall.Seconds(), "events/s")
		b.ReportMetric(float64(s.Fired), "fired")
		b.ReportMetric(float64(s.Suppressed), "suppressed")
		b.ReportMetric(float64(s.Resolved), "resolved")
		b.ReportMetric(float64(acts.runs.Load()), "runs")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.ReportMetric(wall.Seconds(), "wall-s")
		st.Close()
	}
}
