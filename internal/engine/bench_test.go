package engine_test

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkFanOut runs a one-task scenario (core.test.ping) over many
// simulated souls: the engine's own overhead per run (targeting, render,
// dispatch, barrier, recording every result, commit) without a network.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			svc := loadService(b, map[string]string{"scenario/ping/main.yml": "tasks:\n  - {name: ping, module: core.test.ping}\n"})
			var hosts strings.Builder
			hosts.WriteString("hosts:\n")
			for i := range n {
				fmt.Fprintf(&hosts, "  - {sid: h%05d}\n", i)
			}
			hosts.WriteString("expect: {outcome: succeeded}\n")
			w := newWorld(b, svc, "ping", hosts.String())
			w.wait(w.start())
			b.ResetTimer()
			for range b.N {
				run := w.again(nil, false)
				if run.Status != "succeeded" {
					b.Fatalf("%s: %s", run.Status, run.Error)
				}
			}
		})
	}
}

// BenchmarkProbeFanOut is the probe idiom (failed_when reads the task's
// own register across hosts) over many simulated souls.
func BenchmarkProbeFanOut(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			svc := loadService(b, map[string]string{"scenario/probe/main.yml": `
tasks:
  - name: probe
    module: core.exec.run
    register: role
    changed_when: false
    failed_when: size(register.role) < incarnation.host_count
    params: {command: role}
`})
			var hosts strings.Builder
			hosts.WriteString("hosts:\n")
			for i := range n {
				fmt.Fprintf(&hosts, "  - {sid: h%05d}\n", i)
			}
			hosts.WriteString("expect: {outcome: succeeded}\n")
			w := newWorld(b, svc, "probe", hosts.String())
			w.wait(w.start())
			b.ResetTimer()
			for range b.N {
				if run := w.again(nil, false); run.Status != "succeeded" {
					b.Fatalf("%s: %s", run.Status, run.Error)
				}
			}
		})
	}
}
