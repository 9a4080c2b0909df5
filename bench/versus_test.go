package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// Ansible's times on 20 lab hosts (Ansible 2.14 over SSH, 2-core machine)
// from SPEC §15, and the speed-up Soul Stack must reach on each.
var ansibleRef = struct {
	command, create, noop, rollout time.Duration
	speedup                        float64
}{4300 * time.Millisecond, 11600 * time.Millisecond, 11200 * time.Millisecond, 11200 * time.Millisecond, 20}

// versusOps are the four operations of the comparison, in the order one
// round runs them.
var versusOps = []string{"command", "create", "noop", "rollout"}

// BenchmarkVersusAnsible runs the operations of SPEC §15's Ansible
// comparison end to end through the Operator API — each from the request
// to the committed end of the run — on souls of one `soul swarm` process,
// for each host count in $SOULSTACK_BENCH_HOSTS (default 5,20,100), each
// with its own keeper. One op is one round:
//
//   - create: POST /v1/incarnations of the web service, whose create
//     scenario has three tasks (directory, file, template) that change
//     every host (each round's incarnation has its own site_dir);
//   - noop: the same create scenario again on that incarnation (POST …/runs):
//     every task reports unchanged;
//   - command: one command (`uptime` through core.exec.run) on every host;
//   - rollout: the three tasks as a serial: 2 block with a new release —
//     ceil(hosts/2) waves strictly one after another.
//
// Metrics are medians over the rounds per operation, and the speed-up
// over Ansible's 20-host figure (for hosts=20 that is the SPEC's
// comparison; at 5 and 100 it shows how flat the times are).
func BenchmarkVersusAnsible(b *testing.B) {
	for _, n := range envInts(b, "SOULSTACK_BENCH_HOSTS", []int{5, 20, 100}) {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			ctx := context.Background()
			e := startKeeper(b, nil)
			e.registerService("web", webService)
			e.startSwarm(n, "web", "web")
			times := map[string]timings{}
			round := 0
			for b.Loop() {
				round++
				rs, _, err := e.versusRound(ctx, fmt.Sprintf("web-%d", round), []string{"web"}, round, n)
				if err != nil {
					b.Fatal(err)
				}
				for op, rt := range rs {
					times[op] = append(times[op], rt)
				}
			}
			reportVersus(b, times)
		})
	}
}

// versusRound runs the four operations once on a new incarnation over the
// hosts souls carrying covens, checking that each did what it claims, and
// returns each one's timing and this process's (the keeper's) CPU time and
// peak RSS during it.
func (e *env) versusRound(ctx context.Context, inc string, covens []string, round, hosts int) (map[string]runTiming, map[string]ctlUse, error) {
	out, use := map[string]runTiming{}, map[string]ctlUse{}
	essence := map[string]any{"site_dir": "/srv/" + inc}
	var err error
	op := func(name string, f func() (runTiming, error)) error {
		var rt runTiming
		use[name] = measureSelf(e.tb, func() { rt, err = f() })
		out[name] = rt
		return err
	}
	if err := op("create", func() (runTiming, error) {
		return e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: inc, Service: "web", Covens: covens, Essence: essence})
	}); err != nil {
		return nil, nil, fmt.Errorf("create: %w", err)
	}
	if err := e.expectChanged(ctx, inc, 3*hosts); err != nil {
		return nil, nil, fmt.Errorf("create: %w", err)
	}
	if err := op("noop", func() (runTiming, error) { return e.runScenario(ctx, inc, "create", nil) }); err != nil {
		return nil, nil, fmt.Errorf("no-op re-run: %w", err)
	}
	if err := e.expectChanged(ctx, inc, 0); err != nil {
		return nil, nil, fmt.Errorf("no-op re-run: %w", err)
	}
	if err := op("command", func() (runTiming, error) { return e.runScenario(ctx, inc, "command", nil) }); err != nil {
		return nil, nil, fmt.Errorf("command: %w", err)
	}
	if err := op("rollout", func() (runTiming, error) {
		return e.runScenario(ctx, inc, "rollout", map[string]any{"release": fmt.Sprintf("2.%d", round)})
	}); err != nil {
		return nil, nil, fmt.Errorf("rollout: %w", err)
	}
	if err := e.expectWaves(ctx, inc, (hosts+1)/2); err != nil {
		return nil, nil, fmt.Errorf("rollout: %w", err)
	}
	return out, use, nil
}

// expectChanged checks the latest run of inc (without blocks) reported
// exactly want changed results.
func (e *env) expectChanged(ctx context.Context, inc string, want int) error {
	rs, err := e.latestResults(ctx, inc)
	if err != nil {
		return err
	}
	got := 0
	for _, r := range rs {
		if r.Changed {
			got++
		}
	}
	if got != want {
		return fmt.Errorf("%d results changed, want %d", got, want)
	}
	return nil
}

// expectWaves checks the latest run of inc ran in want waves.
func (e *env) expectWaves(ctx context.Context, inc string, want int) error {
	rs, err := e.latestResults(ctx, inc)
	if err != nil {
		return err
	}
	waves := map[int]bool{}
	for _, r := range rs {
		waves[r.Wave] = true
	}
	if len(waves) != want {
		return fmt.Errorf("%d waves, want %d", len(waves), want)
	}
	return nil
}

func (e *env) latestResults(ctx context.Context, inc string) ([]store.HostResult, error) {
	runs, err := e.c.ListRuns(ctx, inc, 1)
	if err != nil || len(runs) == 0 {
		return nil, fmt.Errorf("latest run of %s: %v", inc, err)
	}
	return e.k.Store().ListResults(ctx, runs[0].ID)
}

func reportVersus(b *testing.B, times map[string]timings) {
	ref := map[string]time.Duration{"command": ansibleRef.command, "create": ansibleRef.create, "noop": ansibleRef.noop, "rollout": ansibleRef.rollout}
	for _, op := range versusOps {
		ts := times[op]
		if len(ts) == 0 {
			continue
		}
		m := ts.median(func(t runTiming) time.Duration { return t.Total })
		b.ReportMetric(ms(m), op+"-ms")
		b.ReportMetric(float64(ref[op])/float64(m), op+"-x-ansible")
		for i, t := range ts {
			b.Logf("round %d %s: %s", i+1, op, t)
		}
	}
}
