package bench

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"time"
)

// gcCPU is this process's CPU time (from /proc) and the part of it the Go
// runtime accounts to garbage collection (runtime/metrics: mark workers,
// assists, pauses), with the number of completed GC cycles.
type gcCPU struct {
	cpu, gc time.Duration
	cycles  uint64
}

func readGCCPU() gcCPU {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	st, _ := readProc(os.Getpid())
	return gcCPU{
		cpu:    time.Duration(st.CPUTick) * time.Second / clockTick,
		gc:     time.Duration(s[0].Value.Float64() * float64(time.Second)),
		cycles: s[1].Value.Uint64(),
	}
}

// since is the CPU, GC CPU and cycles from g0 to g.
func (g gcCPU) since(g0 gcCPU) gcCPU {
	return gcCPU{cpu: g.cpu - g0.cpu, gc: g.gc - g0.gc, cycles: g.cycles - g0.cycles}
}

// gcSettings is this process's GOGC and soft memory limit, and the
// environment's GOGC and GOMEMLIMIT.
func gcSettings() string {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	limit := "none"
	if l := s[1].Value.Uint64(); l != math.MaxInt64 {
		limit = fmt.Sprintf("%d MiB", l>>20)
	}
	return fmt.Sprintf("GOGC %d, memory limit %s (environment: GOGC=%q GOMEMLIMIT=%q)",
		int64(s[0].Value.Uint64()), limit, os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"))
}
